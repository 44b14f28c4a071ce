#!/usr/bin/env bash
# tests/contrib/check_patch.sh SOURCE_DIR: CONTRIBUTING.md's worked examples are real diffs (issue
# 17: "a new pull-mode policy touches at most 3 source files and a new learning rule at most 4";
# issue 31: "a policy with its own data flow ... touches at most 4 files"; issue 43: "add a topology
# kind (at most 4 source files)"; issue 47: "a new output file in 2 source files"):
#   tests/contrib/constant-delay.patch  a toy pull-mode policy              (at most 3 source files)
#   tests/contrib/sqrt-staleness.patch  a toy learning rule                 (at most 4 source files)
#   tests/contrib/fetch-every.patch     a toy policy with its own data flow (at most 4 source files)
#   tests/contrib/switch.patch          a toy topology kind                 (at most 4 source files)
#   tests/contrib/workers-csv.patch     a new output file (issue 47)        (at most 2 source files)
# For each, this checks that
#  1. the patch still applies to the tree (git apply --check): a change to the files it touches
#     that breaks it must regenerate it (CONTRIBUTING.md, "The worked example", says how);
#  2. it touches at most its limit of source files (C++ or CUDA files outside tests/);
#  3. CONTRIBUTING.md shows the patch byte for byte: the ```diff block right after the marker
#     line "<!-- tests/contrib/NAME.patch -->";
#  4. the example's class (the topology kind: its builder function) in its test file, whose
#     defining property the unit tests check, is the patch's line for line.
# Exits 0 when all hold, 1 when one fails, 77 (skipped) outside a git checkout.
set -uo pipefail
cd "${1:?usage: check_patch.sh SOURCE_DIR}" || exit 2
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check_patch: skipped: $PWD is not a git checkout, so 'git apply --check' cannot run"
  exit 77
fi
fail=0

# check_example PATCH LIMIT FIRST_LINE TEST_FILE WHAT: FIRST_LINE is where the compared block
# begins ("class NAME " or a function's "TYPE NAME("), the line "};" or "}" ends it.
check_example() {
  local patch=$1 limit=$2 class=$3 test_file=$4 what=$5
  if ! out=$(git apply --check "$patch" 2>&1); then
    echo "check_patch: $patch no longer applies to the tree:"
    echo "$out"
    fail=1
  fi

  local sources count
  sources=$(git apply --numstat "$patch" | awk '{print $3}' | grep -E '\.(cpp|hpp|h|cu)$' | grep -v '^tests/')
  count=$(printf '%s\n' "$sources" | grep -c .)
  echo "check_patch: $patch touches $count source files:" $sources
  if ((count > limit)); then
    echo "check_patch: $what must touch at most $limit source files, this one touches $count"
    fail=1
  fi

  local shown
  shown=$(awk -v marker="<!-- $patch -->" '
    $0 == marker {want = 1; next}
    want == 1 && /^```diff$/ {want = 2; next}
    want == 1 {exit}
    want == 2 && /^```$/ {exit}
    want == 2' CONTRIBUTING.md)
  if [[ -z "$shown" || "$shown" != "$(cat "$patch")" ]]; then
    echo "check_patch: CONTRIBUTING.md's \`\`\`diff block after \"<!-- $patch -->\" is not $patch (paste the patch there)"
    fail=1
  fi

  class_of() {
    awk -v c="$class" 'index($0, c) == 1 || index($0, "+" c) == 1 {on=1} on{sub(/^\+/, ""); print} on && /^};?$/{exit}' "$1"
  }
  if [[ -z "$(class_of "$patch")" || "$(class_of "$patch")" != "$(class_of "$test_file")" ]]; then
    echo "check_patch: '$class...' in $test_file differs from the patch's"
    fail=1
  fi
}

check_example tests/contrib/constant-delay.patch 3 "class ConstantDelayPolicy " tests/test_policy_properties.cpp \
  "a new pull-mode policy"
check_example tests/contrib/sqrt-staleness.patch 4 "class SqrtStalenessRule " tests/test_rules.cpp "a new learning rule"
check_example tests/contrib/fetch-every.patch 4 "class FetchEveryProtocol " tests/test_policy_properties.cpp \
  "a new policy with its own data flow"
check_example tests/contrib/switch.patch 4 "Topology build_switch(" tests/test_topology.cpp "a new topology kind"
check_example tests/contrib/workers-csv.patch 2 "std::string workers_csv(" tests/test_outputs.cpp "a new output file"
exit $fail
