# Sourced by the real-run test scripts: exits 77 (CTest's skip), said on stderr as "NAME: skipped:
# ...", when stalesim BIN was built without MPI (tools/check's sanitizer build), which says so
# before it looks for mpirun, so the probe runs nothing and writes nothing.
# Usage: skip_without_mpi NAME BIN ROOT
skip_without_mpi() {
  local out
  out=$(PATH=/nonexistent "$2" real "$3/scenarios/real/two-workers.json" --out /nonexistent/probe 2>&1)
  if grep -q "built without" <<<"$out"; then  # (not a pipe: pipefail would take stalesim's exit 2)
    echo "$1: skipped: this stalesim was built without MPI (the sanitizer build)" >&2
    exit 77
  fi
}
