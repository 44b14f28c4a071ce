#!/usr/bin/env bash
# tests/layers/check_link_alone.sh SOURCE_DIR BUILD_DIR: a call upwards fails to build (issue 47
# point 1). The build links each layer's library alone (stalesim_layer in CMakeLists.txt: the
# whole library and only the layers it links); this plants a call upwards and requires that link
# to fail. tests/layers/backward-call.patch makes sim/data/dataset.cpp include the worker layer's
# assemble.hpp and call worker_shards(); the patched file, compiled with the data layer's own flags,
# replaces its object in a scratch copy of libstalesim_data.a, which is then linked with the build's
# own command for stalesim_link_data. It must fail with an undefined reference to worker_shards,
# and the same command on the true library must succeed.
# Exits 0 when both hold, 1 when not, 2 on bad usage, 77 (skipped, with the reason) when the build
# has no layer link programs (STALESIM_LINK_CHECK=OFF) or was not generated with Makefiles (the
# flags and the link command are read from the Makefile generator's flags.make and link.txt).
set -uo pipefail
usage="usage: check_link_alone.sh SOURCE_DIR BUILD_DIR"
src=$(cd "${1:?$usage}" && pwd) || exit 2
build=$(cd "${2:?$usage}" && pwd) || exit 2
flags=$build/CMakeFiles/stalesim_data.dir/flags.make
link=$build/CMakeFiles/stalesim_link_data.dir/link.txt
if [[ ! -f $flags || ! -f $link || ! -f $build/libstalesim_data.a ]]; then
  echo "check_link_alone: skipped: $build has no Makefile build of stalesim_link_data" \
    "(configure with STALESIM_LINK_CHECK=ON and the Unix Makefiles generator, then build)"
  exit 77
fi
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
[[ -n $cxx ]] || { echo "check_link_alone: $build/CMakeCache.txt names no C++ compiler"; exit 2; }

scratch=$(mktemp -d "${TMPDIR:-/tmp}/stalesim-link-alone-XXXXXX") || exit 2
trap 'rm -rf -- "$scratch"' EXIT
mkdir -p "$scratch/tree/sim/data"
cp "$src/sim/data/dataset.cpp" "$scratch/tree/sim/data/dataset.cpp"
if ! patch -s -d "$scratch/tree" -p1 <"$src/tests/layers/backward-call.patch"; then
  echo "check_link_alone: tests/layers/backward-call.patch no longer applies to sim/data/dataset.cpp: regenerate it"
  exit 1
fi

# The data layer's compile line (without the precompiled header: the file includes what it uses).
field() { sed -n "s/^$1 = //p" "$flags"; }
compile="\"$cxx\" $(field CXX_DEFINES) $(field CXX_INCLUDES) $(field CXX_FLAGS)"
if ! out=$(eval "$compile -c \"$scratch/tree/sim/data/dataset.cpp\" -o \"$scratch/dataset.cpp.o\"" 2>&1); then
  echo "check_link_alone: the patched sim/data/dataset.cpp does not compile:"
  echo "$out"
  exit 1
fi
cp "$build/libstalesim_data.a" "$scratch/true.a"
cp "$build/libstalesim_data.a" "$scratch/planted.a"
ar r "$scratch/planted.a" "$scratch/dataset.cpp.o" 2>/dev/null || { echo "check_link_alone: ar failed"; exit 2; }

# The build's link of the data layer alone, on the library LIB, into the scratch folder.
link_with() {
  local cmd
  cmd=$(sed -e "s| libstalesim_data.a | $1 |" -e "s| -o stalesim_link_data | -o $scratch/linked |" "$link")
  grep -qF " $1 " <<<"$cmd" || { echo "check_link_alone: $link does not link libstalesim_data.a as expected"; return 2; }
  (cd "$build" && eval "$cmd") 2>&1
}
if ! out=$(link_with "$scratch/true.a"); then
  echo "check_link_alone: the true data layer does not link alone:"
  echo "$out"
  exit 1
fi
if out=$(link_with "$scratch/planted.a"); then
  echo "check_link_alone: a call from sim/data up into sim/worker linked (the layer's link does not stop it)"
  exit 1
fi
if ! grep -q "undefined reference to .*worker_shards" <<<"$out"; then
  echo "check_link_alone: the planted link failed, but not on worker_shards:"
  echo "$out"
  exit 1
fi
echo "check_link_alone: ok (the data layer links alone; with a call into sim/worker it fails:" \
  "$(grep -m1 -o "worker_shards([^']*" <<<"$out"))"
