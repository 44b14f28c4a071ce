#!/usr/bin/env bash
# tests/contrib/check_patch.sh SOURCE_DIR: CONTRIBUTING.md's worked example of adding a policy is
# a real diff, tests/contrib/constant-delay.patch (issue 17: "a new pull-mode policy touches at most
# 3 source files"). This checks that
#  1. the patch still applies to the tree (git apply --check): a change to the files it touches
#     that breaks it must regenerate it (CONTRIBUTING.md, "The worked example", says how);
#  2. it touches at most 3 source files (C++ or CUDA files outside tests/);
#  3. CONTRIBUTING.md shows the patch byte for byte (its ```diff block);
#  4. the ConstantDelayPolicy class in tests/test_policy_properties.cpp, whose defining property
#     the unit tests check, is the patch's class line for line.
# Exits 0 when all hold, 1 when one fails, 77 (skipped) outside a git checkout.
set -uo pipefail
cd "${1:?usage: check_patch.sh SOURCE_DIR}" || exit 2
patch=tests/contrib/constant-delay.patch
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check_patch: skipped: $PWD is not a git checkout, so 'git apply --check' cannot run"
  exit 77
fi
fail=0

if ! out=$(git apply --check "$patch" 2>&1); then
  echo "check_patch: $patch no longer applies to the tree:"
  echo "$out"
  fail=1
fi

sources=$(git apply --numstat "$patch" | awk '{print $3}' | grep -E '\.(cpp|hpp|h|cu)$' | grep -v '^tests/')
count=$(printf '%s\n' "$sources" | grep -c .)
echo "check_patch: the example touches $count source files:" $sources
if ((count > 3)); then
  echo "check_patch: a new pull-mode policy must touch at most 3 source files, this one touches $count"
  fail=1
fi

shown=$(awk '/^```diff$/{on=1; next} on && /^```$/{exit} on' CONTRIBUTING.md)
if [[ "$shown" != "$(cat "$patch")" ]]; then
  echo "check_patch: CONTRIBUTING.md's \`\`\`diff block is not $patch (paste the patch there)"
  fail=1
fi

class_of() { awk '/^\+?class ConstantDelayPolicy/{on=1} on{sub(/^\+/, ""); print} on && /^};$/{exit}' "$1"; }
if [[ -z "$(class_of "$patch")" || "$(class_of "$patch")" != "$(class_of tests/test_policy_properties.cpp)" ]]; then
  echo "check_patch: ConstantDelayPolicy in tests/test_policy_properties.cpp differs from the patch's"
  fail=1
fi
exit $fail
