#!/usr/bin/env bash
# CTest real_kernel_net (issue 42 point 3): `stalesim real --net kernel` runs its ranks in a network
# the kernel makes from the scenario, and removes it. Checks, on racks (the server and worker 0 in
# rack 0, worker 1 in rack 1) and on the star:
#  - the run completes and writes its outputs, and no network namespace of its making is left;
#  - the bytes cross the shaped links: at 20 Mbit/s per link (a 400 KiB message takes 0.16 s
#    each way) the same 3-second run makes at most a third of the updates it makes over 1 Gbit/s;
#  - a worker rank killed mid-run: exit 3, and nothing of the run is left;
#  - SIGKILL of the launcher mid-run: mpirun, every rank and the namespaces go (real-net's guard).
# Exit 77 (CTest's skip), said on stderr, without root or network namespaces, without mpirun, or
# with a stalesim built without MPI: never a pass.
# Usage: tests/real_kernel_net_test.sh STALESIM
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:?usage: real_kernel_net_test.sh STALESIM}
skip() { echo "real_kernel_net: skipped: $*" >&2; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "needs root (CAP_NET_ADMIN)"
command -v mpirun >/dev/null || skip "mpirun is not on PATH"
probe=ssnkprobe$$
ip netns add "$probe" 2>/dev/null || skip "this machine cannot make network namespaces (ip netns add failed)"
ip netns del "$probe"
# shellcheck source=tests/real_skip.sh
source "$root/tests/real_skip.sh"
skip_without_mpi real_kernel_net "$bin" "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root" || exit 1
fails=0
fail() { echo "real_kernel_net: FAIL: $*" >&2; fails=$((fails + 1)); }
scenario=scenarios/real/measured-pair.json
racks=(--set cluster.network.topology=racks --set cluster.network.racks.count=2
       --set cluster.network.racks.hosts_per_rack=2 --set cluster.network.racks.uplink_bandwidth_gbps=0.5)
# The namespaces of a run whose launcher had process id $1 (real-net's ID: k + 5 hex digits).
namespaces_of() { ip netns list | awk '{ print $1 }' | grep -c "^ssn-$(printf 'k%05x' $(($1 % 1048576)))-" ; }

run() {  # NAME GBPS ARGS...: a 3-second measured ASP run; its updates on stdout
  local name=$1 gbps=$2; shift 2
  "$bin" real $scenario --set policy.type=asp --set stop.virtual_time_s=3 --set "cluster.network.bandwidth_gbps=$gbps" \
    --set "cluster.network.server_bandwidth_gbps=$gbps" "$@" --timing measured --net kernel --out "$tmp/$name" \
    </dev/null >"$tmp/$name.log" 2>&1 &
  local pid=$!
  wait $pid
  local rc=$?
  [[ $rc -eq 0 ]] || { fail "$name: exit $rc: $(tail -3 "$tmp/$name.log")"; echo 0; return; }
  [[ $(namespaces_of $pid) -eq 0 ]] || fail "$name: namespaces of the run are left: $(ip netns list | tr '\n' ' ')"
  grep -o '"server_updates": [0-9]*' "$tmp/$name/summary.json" | head -1 | awk '{ print $2 }'
}

fast=$(run racks-fast 1 "${racks[@]}")
slow=$(run racks-slow 0.02 "${racks[@]}")
echo "real_kernel_net: racks, 3 s of ASP: $fast updates over 1 Gbit/s links, $slow over 20 Mbit/s"
grep -q "network k[0-9a-f]* made by the kernel (.* --racks 2 --uplink-mbit 500 --host-mbit 1000,1000,1000 --rack-of 0,0,1)" \
  "$tmp/racks-fast.log" || fail "racks-fast: the network line does not show racks 0,0,1: $(grep 'made by the kernel' "$tmp/racks-fast.log")"
[[ ${fast:-0} -gt 30 ]] || fail "racks over 1 Gbit/s made ${fast:-0} updates (expected more than 30)"
[[ $(( ${slow:-0} * 3 )) -le ${fast:-0} ]] || fail "20 Mbit/s links made $slow updates, more than a third of 1 Gbit/s's $fast: the shaping is not on the path"
star=$(run star 1)
[[ ${star:-0} -gt 30 ]] || fail "the star over 1 Gbit/s made ${star:-0} updates (expected more than 30)"
echo "real_kernel_net: star, 3 s of ASP over 1 Gbit/s links: $star updates"

# A worker rank that dies mid-run (fault injection): the job fails (exit 3) and its network goes.
STALESIM_REAL_INJECT_FAULT=1:20:kill "$bin" real $scenario --set stop.virtual_time_s=30 --timing measured --net kernel \
  --out "$tmp/rank-died" </dev/null >"$tmp/rank-died.log" 2>&1 &
pid=$!
wait $pid
rc=$?
[[ $rc -eq 3 ]] || fail "a killed worker rank: exit $rc, not 3: $(tail -3 "$tmp/rank-died.log")"
[[ $(namespaces_of $pid) -eq 0 ]] || fail "a killed worker rank: namespaces left: $(ip netns list | tr '\n' ' ')"
pgrep -f "$tmp/rank-died" >/dev/null && fail "a killed worker rank: processes left: $(pgrep -af "$tmp/rank-died" | head -3)"

# SIGKILL of the launcher once the run has started: nothing of it is left within 10 s.
"$bin" real $scenario --set stop.virtual_time_s=30 --timing measured --net kernel --out "$tmp/killed" \
  </dev/null >"$tmp/killed.log" 2>&1 &
pid=$!
for _ in $(seq 600); do grep -q "the run starts" "$tmp/killed.log" && break; sleep 0.1; done
grep -q "the run starts" "$tmp/killed.log" || fail "killed: the run never started: $(tail -3 "$tmp/killed.log")"
kill -KILL $pid; wait $pid 2>/dev/null
left=1
for _ in $(seq 100); do
  if [[ $(namespaces_of $pid) -eq 0 ]] && ! pgrep -f "$tmp/killed" >/dev/null; then left=0; break; fi
  sleep 0.1
done
[[ $left -eq 0 ]] || fail "after SIGKILL of the launcher: left $(ip netns list | tr '\n' ' ') / $(pgrep -af "$tmp/killed" | head -3)"
[[ $fails -eq 0 ]] || exit 1
echo "real_kernel_net: pass"
