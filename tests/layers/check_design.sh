#!/usr/bin/env bash
# tests/layers/check_design.sh SOURCE_DIR [BUILD_DIR]: DESIGN.md's picture of the parts is the
# tree's (issue 47 point 7). Its table "Folders of `sim/`" names every folder of sim/ once and no
# folder that is not there; its table of layers names exactly the code's top-level folders (base/,
# models/, sim/, tools/). With BUILD_DIR, its table "Libraries" is the build's (BUILD_DIR/layers.txt,
# written by CMake): the same libraries; each library's row names folders and files that hold
# exactly its sources (a folder holds the files under it that no longer entry names); and the same
# links. When a folder is added, moved or removed, or a library changes, DESIGN.md says so in the
# same change.
# --selftest SOURCE_DIR [BUILD_DIR]: runs the check on copies with a folder added and a row
# removed (and, with BUILD_DIR, a file moved to another library and a link added), and requires each
# to fail and the true copy to pass.
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
  local libraries=""
  if [[ -n ${2-} ]]; then
    if ! libraries=$(check_libraries "$design" "$2"); then
      echo "$libraries"
      fail=1
    fi
  fi
  [[ $fail -eq 0 ]] && echo "check_design: ok ($(wc -w <<<"$actual") folders of sim/${libraries:+; $libraries})"
  return $fail
}

# check_libraries DESIGN LAYERS: DESIGN.md's table "Libraries" against CMake's layers.txt ("NAME
# source" and "NAME -> LINK" lines; sources generated in the build folder have absolute paths and
# are not named in the table). Prints the differences, or "N libraries" when there are none.
check_libraries() {
  local design=$1 layers=$2
  [[ -f $layers ]] || { echo "check_design: $layers: missing (build first)"; return 1; }
  awk '
    FNR == NR {
      if (NF == 2 && $2 !~ /^\//) { src[++ns] = $2; lib_of[ns] = $1; libs[$1] = 1 }
      else if (NF == 3 && $2 == "->") { built_links[$1] = built_links[$1] " " $3; libs[$1] = 1 }
      next
    }
    /^### Libraries/ { on = 1; next }
    on && /^### / { on = 0 }
    on && /^\| `[a-z_]+` \|/ {
      split($0, cell, "|"); name = cell[2]; gsub(/[ `]/, "", name)
      if (name in rows) print "check_design: DESIGN.md names library " name " twice"
      rows[name] = 1
      rest = cell[3]
      while (match(rest, /`[^`]+`/)) { e = substr(rest, RSTART + 1, RLENGTH - 2); entry[e] = name; rest = substr(rest, RSTART + RLENGTH) }
      rest = cell[4]; l = ""
      while (match(rest, /`[a-z_]+`/)) { l = l " " substr(rest, RSTART + 1, RLENGTH - 2); rest = substr(rest, RSTART + RLENGTH) }
      listed_links[name] = l
    }
    function sorted(words,   n, w, i, j, t, out) {
      n = split(words, w, " ")
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (w[j] < w[i]) { t = w[i]; w[i] = w[j]; w[j] = t }
      out = ""; for (i = 1; i <= n; i++) out = out (i > 1 ? " " : "") w[i]
      return out
    }
    END {
      bad = 0; count = 0
      for (l in libs) { count++; if (!(l in rows)) { print "check_design: DESIGN.md (Libraries) has no row for the library " l; bad = 1 } }
      for (l in rows) if (!(l in libs)) { print "check_design: DESIGN.md (Libraries) names " l ", which CMakeLists.txt does not build"; bad = 1 }
      for (i = 1; i <= ns; i++) {
        # The longest entry that holds the source: the file itself, else its nearest folder.
        best = ""
        for (e in entry) if ((e == src[i] || (e ~ /\/$/ && index(src[i], e) == 1)) && length(e) > length(best)) best = e
        if (best == "") { print "check_design: DESIGN.md (Libraries) names no row for " src[i] " (library " lib_of[i] ")"; bad = 1 }
        else if (entry[best] != lib_of[i]) { print "check_design: " src[i] " is in library " lib_of[i] ", DESIGN.md (Libraries) puts it (" best ") in " entry[best]; bad = 1 }
        else used[best] = 1
      }
      for (e in entry) if (!(e in used) && entry[e] in libs) { print "check_design: DESIGN.md (Libraries) row " entry[e] " names " e ", which holds none of its sources"; bad = 1 }
      for (l in libs) if (l in rows && sorted(built_links[l]) != sorted(listed_links[l])) {
        print "check_design: library " l " links \"" sorted(built_links[l]) "\" in CMakeLists.txt, DESIGN.md (Libraries) says \"" sorted(listed_links[l]) "\""; bad = 1
      }
      if (!bad) print count " libraries as CMakeLists.txt builds them"
      exit bad
    }' "$layers" "$design"
}

if [[ ${1-} == --selftest ]]; then
  root=${2:?usage: check_design.sh --selftest SOURCE_DIR [BUILD_DIR]}
  build=${3-}
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
  if [[ -n $build ]]; then
    cp "$root/DESIGN.md" "$scratch/DESIGN.md"
    check "$scratch" "$build/layers.txt" >/dev/null || { echo "check_design: selftest: the true libraries failed"; exit 1; }
    # sim/run.cpp built into the driver library; a link the table does not name.
    sed 's|^run sim/run.cpp$|driver sim/run.cpp|' "$build/layers.txt" >"$scratch/moved.txt"
    out=$(check "$scratch" "$scratch/moved.txt") && { echo "check_design: selftest: a file moved to another library passed"; exit 1; }
    grep -q "sim/run.cpp is in library driver" <<<"$out" || { echo "check_design: selftest: wrong message: $out"; exit 1; }
    { cat "$build/layers.txt"; echo "data -> worker"; } >"$scratch/linked.txt"
    out=$(check "$scratch" "$scratch/linked.txt") && { echo "check_design: selftest: a link the table lacks passed"; exit 1; }
    grep -q "library data links" <<<"$out" || { echo "check_design: selftest: wrong message: $out"; exit 1; }
  fi
  echo "check_design: selftest: ok (a folder without a row and a removed row fail${build:+; so do a file moved to another library and a link the table lacks})"
  exit 0
fi
if [[ -n ${2-} ]]; then
  check "${1:?usage: check_design.sh SOURCE_DIR [BUILD_DIR] | --selftest SOURCE_DIR [BUILD_DIR]}" "$2/layers.txt"
else
  check "${1:?usage: check_design.sh SOURCE_DIR [BUILD_DIR] | --selftest SOURCE_DIR [BUILD_DIR]}"
fi
