#!/usr/bin/env bash
# Installs every Debian package stalesim needs, and nothing else.
# Idempotent and non-interactive: packages already present are skipped, `apt-get update`
# runs at most once, and nothing is downloaded from outside Debian's archive.
# Usage: tools/install-deps.sh [--with-mpi] [--with-plots] [--with-fuzz] [--with-simgrid] [--with-browser] [--all]
set -euo pipefail

core=(build-essential cmake pkg-config zlib1g-dev libeigen3-dev libboost-program-options-dev
      nlohmann-json3-dev libfmt-dev doctest-dev libxxhash-dev dataset-fashion-mnist)
mpi=(libopenmpi-dev openmpi-bin)
plots=(python3 python3-matplotlib)
fuzz=(clang libclang-rt-dev)  # tools/fuzz and tools/check's sanitizer pass (libFuzzer, ASan, UBSan)
simgrid=(libsimgrid-dev)      # tools/validate-network only (about 13 MB from Debian main, with ns-3)
browser=(chromium-headless-shell)  # the report's browser test (tests/browser/report_browser_test.py)

want=("${core[@]}")
for arg in "$@"; do
  case "$arg" in
    --with-mpi) want+=("${mpi[@]}") ;;
    --with-plots) want+=("${plots[@]}") ;;
    --with-fuzz) want+=("${fuzz[@]}") ;;
    --with-simgrid) want+=("${simgrid[@]}") ;;
    --with-browser) want+=("${browser[@]}") ;;
    --all) want+=("${mpi[@]}" "${plots[@]}" "${fuzz[@]}" "${simgrid[@]}" "${browser[@]}") ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$arg' (allowed: --with-mpi --with-plots --with-fuzz --with-simgrid --with-browser --all)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#want[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q </dev/null
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
