#!/usr/bin/env bash
# tests/layers/check_design.sh SOURCE_DIR: DESIGN.md's picture of the parts is the tree's (issue 47
# point 7). Its table "Folders of `sim/`" names every folder of sim/ once and no folder that is not
# there; its table of layers names exactly the code's top-level folders (base/, models/, sim/,
# tools/). When a folder is added, moved or removed, DESIGN.md says so in the same change.
# --selftest SOURCE_DIR: runs the check on copies with a folder added and a row removed, and
# requires each to fail and the true copy to pass.
# Exits 0 when it holds, 1 when it does not (each difference printed), 2 on bad usage.
set -uo pipefail

check() {
  local root=$1 fail=0
  local design=$root/DESIGN.md
  [[ -f $design ]] || { echo "check_design: $design: missing"; return 1; }
  # The first cell of each row of the table after the heading "### Folders of `sim/`".
  local listed
  listed=$(awk '/^### Folders of `sim\/`/ { on = 1; next } on && /^### / { exit } on && /^\| `sim\// {
      split($0, cell, "|"); n = split(cell[2], names, ","); for (i = 1; i <= n; i++) {
        if (match(names[i], /`sim\/[^`]*`/)) print substr(names[i], RSTART + 1, RLENGTH - 2) } }' "$design" |
    sed 's|/$||' | grep -v '^sim$' | sort)
  local actual
  actual=$(cd "$root" && find sim -mindepth 1 -maxdepth 1 -type d | sort)
  local missing extra twice
  missing=$(comm -13 <(sort -u <<<"$listed") <(printf '%s\n' "$actual"))
  extra=$(comm -23 <(sort -u <<<"$listed") <(printf '%s\n' "$actual"))
  twice=$(uniq -d <<<"$listed")
  [[ -z $missing ]] || { echo "check_design: DESIGN.md's \"Folders of \`sim/\`\" has no row for:" $missing; fail=1; }
  [[ -z $extra ]] || { echo "check_design: DESIGN.md's \"Folders of \`sim/\`\" names folders that do not exist:" $extra; fail=1; }
  [[ -z $twice ]] || { echo "check_design: DESIGN.md's \"Folders of \`sim/\`\" names twice:" $twice; fail=1; }
  # The layers: the first cells of the table after "### Layers".
  local layers
  layers=$(awk '/^### Layers/ { on = 1; next } on && /^### / { exit } on && /^\| `[a-z]+\/` \|/ {
      split($0, cell, "|"); gsub(/[ `]/, "", cell[2]); print cell[2] }' "$design" | tr '\n' ' ')
  [[ $layers == "base/ models/ sim/ tools/ " ]] ||
    { echo "check_design: DESIGN.md's table of layers names '$layers', expected 'base/ models/ sim/ tools/ '"; fail=1; }
  [[ $fail -eq 0 ]] && echo "check_design: ok ($(wc -w <<<"$actual") folders of sim/)"
  return $fail
}

if [[ ${1-} == --selftest ]]; then
  root=${2:?usage: check_design.sh --selftest SOURCE_DIR}
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/stalesim-check-design-XXXXXX") || exit 2
  trap 'rm -rf -- "$scratch"' EXIT
  cp "$root/DESIGN.md" "$scratch/DESIGN.md"
  (cd "$root" && find sim -mindepth 1 -maxdepth 1 -type d) | while read -r d; do mkdir -p "$scratch/$d"; done
  check "$scratch" >/dev/null || { echo "check_design: selftest: the true copy failed"; exit 1; }
  mkdir "$scratch/sim/newpart"
  out=$(check "$scratch") && { echo "check_design: selftest: a folder without a row passed"; exit 1; }
  grep -q "has no row for: sim/newpart" <<<"$out" || { echo "check_design: selftest: wrong message: $out"; exit 1; }
  rmdir "$scratch/sim/newpart"
  grep -v '^| `sim/sweep/`' "$root/DESIGN.md" >"$scratch/DESIGN.md"
  out=$(check "$scratch") && { echo "check_design: selftest: a folder whose row was removed passed"; exit 1; }
  grep -q "has no row for: sim/sweep" <<<"$out" || { echo "check_design: selftest: wrong message: $out"; exit 1; }
  echo "check_design: selftest: ok (a folder without a row and a removed row both fail)"
  exit 0
fi
check "${1:?usage: check_design.sh SOURCE_DIR | --selftest SOURCE_DIR}"
