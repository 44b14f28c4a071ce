#!/usr/bin/env bash
# tests/layers/check_links.sh SOURCE_DIR BUILD_DIR: the layers as the linker sees them (issue 47 point 1),
# finer than the libraries: the build links each layer's library alone, so a call into a library
# not below it fails the build (CMakeLists.txt, stalesim_layer); inside one library, and between
# libraries that may not call each other, this keeps the ranks of the folders and sim/ root files.
# check_layers.sh reads the #include lines; a call needs no include of the layer that defines it
# (a declaration in a lower header is enough), so this reads the compiled libraries (one per layer,
# and the CUDA kernels) instead: for every object, the symbols it needs (nm -u) and the folder whose
# object defines each one (nm --defined-only, strong symbols: not inline functions or templates,
# which every user carries). Each folder has a rank below (a sim/ root file counts by its own
# name); a folder may call only folders of lower rank. An arrow upwards fails, unless it is one of
# the known ones listed under `known`, which issue 47 removes one by one: a listed arrow that is
# gone fails too, so that the list only shrinks.
# --selftest SOURCE_DIR BUILD_DIR: plants a call from sim/data into the worker core and a call from sim/worker
# up into the run, and requires both to fail and the true objects to pass.
# Exits 0 when it holds, 1 when it does not (each arrow printed with a symbol), 2 on bad usage.
set -uo pipefail

# Lowest first. Equal rank: neither may call the other. sim/scenario's headers are plain data
# that every layer reads (no code of theirs is called from below); its code, the loader, sits
# above the policies' and rules' registration rows, whose names and traits it checks a scenario
# against.
ranks='
gen 0
base 0
models 1
sim:text 2
sim:build_info 2
sim:param_store 2
sim:gradient_pool 2
sim/data 3
sim/policies 4
sim/rules 5
sim:algorithms 6
sim/scenario 7
sim:workloads 7
sim/plan 8
sim/output 8
sim/network 9
sim/worker 10
sim:evaluation 10
sim:run_driver 11
sim:simulation 12
sim:run 13
sim/estimate 13
sim/sweep 14
sim/real 15
sim/analysis 15
'
# The arrows upwards that exist today, which issue 47 removes one by one: none left (the last,
# sim/policies -> sim/worker, went when the policies' list named their protocols instead of
# holding the factories). A line here is "FROM -> TO".
known='
'

# One line per symbol: "D folder symbol" (defined) or "U folder symbol" (needed), read from the
# libraries themselves (not the object folders, where an object of a moved or removed source may
# linger): one library per layer, each with its sources listed in BUILD_DIR/layers.txt (written by
# CMake), and the CUDA kernels' library (the .cu files). A member is named by its source file's
# name, unique within its library. models/cuda is the models layer's (the CUDA backend and its
# stubs call each other); the generated files (profiles, git revision) are "gen". An unknown member
# fails.
symbols() {
  local src=$1 build=$2 layers=$2/layers.txt name
  [[ -f $layers ]] || return 0
  local -a libs=()
  for name in $(awk 'NF == 2 { print "stalesim_" $1 }' "$layers" | sort -u) stalesim_cuda_kernels; do
    local a
    a=$(find "$build" -maxdepth 2 -name "lib$name.a" -print -quit)
    [[ -n $a ]] && libs+=("$a")
  done
  [[ ${#libs[@]} -gt 0 ]] || return 0
  {
    awk 'NF == 2 { print "S", "libstalesim_" $1 ".a", $2 }' "$layers"
    (cd "$src" && find models -name '*.cu') | awk '{ print "S", "libstalesim_cuda_kernels.a", $0 }'
    nm -A -g --defined-only "${libs[@]}" | awk '{ print "D", $0 }'
    nm -A -u "${libs[@]}" | awk '{ print "U", $0 }'
  } | awk '
    function folder(path,   n, parts) {
      if (path ~ /^\//) return "gen"             # generated in the build folder
      if (path ~ /^models\/cuda\//) return "models"
      n = split(path, parts, "/")
      if (parts[1] == "sim" && n == 2) { sub(/\..*$/, "", parts[2]); return "sim:" parts[2] }
      sub(/\/[^\/]*$/, "", path); return path
    }
    $1 == "S" { n = split($3, parts, "/"); home[$2 ":" parts[n] ".o"] = folder($3); next }
    NF == 4 {
      # "ARCHIVE:MEMBER:ADDRESS TYPE SYMBOL" or "ARCHIVE:MEMBER:   U SYMBOL"
      key = $2; sub(/^.*\//, "", key)                 # the archive and member, path dropped
      split(key, kv, ":"); member = kv[1] ":" kv[2]
      if (member in home) f = home[member]
      else { print "X", member; next }
      if ($1 == "D" && $3 ~ /^[TDBR]$/) print "D", f, $4
      else if ($1 == "U" && $3 == "U") print "U", f, $4
    }'
}

# Reads symbols() lines on stdin; prints the arrows upwards not in `known`, and the known ones gone.
check() {
  awk -v ranks="$ranks" -v known="$known" '
    BEGIN {
      n = split(ranks, r, "\n"); for (i = 1; i <= n; i++) if (split(r[i], kv, " ") == 2) rank[kv[1]] = kv[2]
      n = split(known, k, "\n"); for (i = 1; i <= n; i++) if (k[i] != "") allowed[k[i]] = 1
    }
    $1 == "X" { print "check_links: library member " $2 " has no source file under the source folder"; unknown = 1; next }
    $1 == "D" { if (!($3 in home)) home[$3] = $2; next }
    { need[NR] = $2 " " $3 }
    END {
      bad = unknown
      for (i in need) {
        split(need[i], p, " "); from = p[1]; sym = p[2]
        if (!(sym in home)) continue  # a library outside stalesim, or the standard library
        to = home[sym]
        if (from == to) continue
        if (!(from in rank)) { unranked[from] = 1; continue }
        if (!(to in rank)) { unranked[to] = 1; continue }
        if (rank[from] > rank[to]) continue
        arrow = from " -> " to
        if (arrow in allowed) { seen[arrow] = 1; continue }
        if (!(arrow in example)) example[arrow] = sym
      }
      for (f in unranked) { print "check_links: folder " f " has no rank: add it to the table in tests/layers/check_links.sh"; bad = 1 }
      for (a in example) { print "check_links: " a " calls upwards (" example[a] ")"; bad = 1 }
      for (a in allowed) if (!(a in seen)) { print "check_links: the known arrow " a " is gone: remove it from `known`"; bad = 1 }
      exit bad
    }'
}

if [[ ${1-} == --selftest ]]; then
  src=${2:?usage: check_links.sh --selftest SOURCE_DIR BUILD_DIR}
  build=${3:?usage: check_links.sh --selftest SOURCE_DIR BUILD_DIR}
  all=$(symbols "$src" "$build") || exit 2
  [[ -n $all ]] || { echo "check_links: selftest: no layer libraries (layers.txt, libstalesim_*.a) under $build"; exit 2; }
  check <<<"$all" >/dev/null || { echo "check_links: selftest: the true libraries failed"; exit 1; }
  # A symbol the worker core defines, needed by sim/data; one sim:run defines, needed by sim/worker.
  core=$(awk '$1 == "D" && $2 == "sim/worker" { print $3; exit }' <<<"$all")
  run=$(awk '$1 == "D" && $2 == "sim:run" { print $3; exit }' <<<"$all")
  out=$(printf '%s\nU sim/data %s\n' "$all" "$core" | check) && { echo "check_links: selftest: sim/data -> sim/worker passed"; exit 1; }
  grep -q "sim/data -> sim/worker calls upwards" <<<"$out" || { echo "check_links: selftest: wrong message: $out"; exit 1; }
  out=$(printf '%s\nU sim/worker %s\n' "$all" "$run" | check) && { echo "check_links: selftest: sim/worker -> sim:run passed"; exit 1; }
  grep -q "sim/worker -> sim:run calls upwards" <<<"$out" || { echo "check_links: selftest: wrong message: $out"; exit 1; }
  echo "check_links: selftest: ok (calls from sim/data into the core and from the core into the run both fail)"
  exit 0
fi
src=${1:?usage: check_links.sh SOURCE_DIR BUILD_DIR | --selftest SOURCE_DIR BUILD_DIR}
build=${2:?usage: check_links.sh SOURCE_DIR BUILD_DIR | --selftest SOURCE_DIR BUILD_DIR}
all=$(symbols "$src" "$build") || exit 2
[[ -n $all ]] || { echo "check_links: no layer libraries (layers.txt, libstalesim_*.a) under $build: build first"; exit 2; }
out=$(check <<<"$all")
rc=$?
[[ -n $out ]] && echo "$out"
[[ $rc -eq 0 ]] &&
  echo "check_links: ok ($(grep -c '^U' <<<"$all") needed symbols; $(grep -c . <<<"$known") known arrows upwards left)"
exit $rc
