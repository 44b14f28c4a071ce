#!/usr/bin/env bash
# CTest real_net: tools/real-net builds a kernel-made network and removes exactly what it made
# (issue 42 point 3). Exit 77 (CTest's skip) where this machine cannot make network namespaces:
# said on stderr, never a pass.
# Usage: tests/real_net_test.sh [STALESIM]   (with STALESIM and mpirun: also an MPI ping-pong
# across a shaped link, whose measured bandwidth must be the shaping's, not the machine's)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
net=$root/tools/real-net
bin=${1:-}
fails=0
fail() { echo "real_net: FAIL: $*" >&2; fails=$((fails + 1)); }

if [[ $(id -u) -ne 0 ]]; then echo "real_net: skipped: needs root (CAP_NET_ADMIN)" >&2; exit 77; fi
probe=ssnprobe$$
if ! ip netns add "$probe" 2>/dev/null; then
  echo "real_net: skipped: this machine cannot make network namespaces (ip netns add failed)" >&2; exit 77
fi
ip netns del "$probe"

id=$(printf 't%05x' $(($$ % 1048576)))
tmp=$(mktemp -d)
made=()  # namespaces this test made by hand (decoys), removed at the end by their own names
cleanup() {
  for s in "$tmp"/*.state; do [[ -f $s ]] && "$net" down "$(basename "$s" .state)" --state "$s" >/dev/null 2>&1; done
  for n in "${made[@]}"; do ip netns del "$n" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT

ours() { ip netns list 2>/dev/null | cut -d' ' -f1 | grep -E "^ssn-$1-(h[0-9]+|sw)$" | sort; }
links_of() { ip -o link 2>/dev/null | grep -c "ss$1" || true; }

# Bad usage: exit 2, nothing made.
"$net" up "$id" --hosts 0 --host-mbit 100 --state "$tmp/$id.state" 2>/dev/null; rc=$?
[[ $rc -eq 2 && ! -e $tmp/$id.state && -z $(ours "$id") ]] || fail "--hosts 0: exit $rc, or something was made"
"$net" up "BAD ID" --hosts 2 --host-mbit 100 2>/dev/null; [[ $? -eq 2 ]] || fail "a bad ID was accepted"
"$net" up "$id" --hosts 2 --host-mbit 100 --uplink-mbit 10 --state "$tmp/$id.state" 2>/dev/null
[[ $? -eq 2 ]] || fail "--uplink-mbit without --racks was accepted"

# The star: 3 hosts at 200 Mbit/s, both directions of every host link shaped.
"$net" up "$id" --hosts 3 --host-mbit 200 --state "$tmp/$id.state" >/dev/null || fail "star up: exit $?"
[[ $(ours "$id" | wc -l) -eq 4 ]] || fail "star: expected 4 namespaces, got: $(ours "$id" | tr '\n' ' ')"
for i in 0 1 2; do
  "$net" exec "$id" "$i" tc class show dev eth0 | grep -q "rate 200Mbit" || fail "host $i -> switch not shaped"
  "$net" switch "$id" tc class show dev "ss${id}p$i" | grep -q "rate 200Mbit" || fail "switch -> host $i not shaped"
done
# Reachable hosts answer a TCP connect to a closed port at once (refused); an address no host
# has gets no answer (the timeout's 124).
out=$("$net" exec "$id" 1 timeout 5 bash -c 'echo >/dev/tcp/192.0.2.3/9' 2>&1)
[[ $out == *"Connection refused"* ]] || fail "host 1 cannot reach host 2 across the bridge: $out"
"$net" exec "$id" 1 timeout 2 bash -c 'echo >/dev/tcp/192.0.2.99/9' 2>/dev/null
[[ $? -eq 124 ]] || fail "an address no host has answered"
"$net" up "$id" --hosts 2 --host-mbit 100 --state "$tmp/$id.state" 2>/dev/null
[[ $? -eq 2 ]] || fail "a second up of the same id was accepted"

# The MPI transport across a shaped link (calibrate --cpu's ping-pong, run inside the namespaces
# as real runs are): its bandwidth is the shaping's (200 Mbit/s, less protocol overhead), far
# below what loopback gives, so the shaping is what the ranks see.
if [[ -n $bin && -x $bin ]] && command -v mpirun >/dev/null; then
  env=(PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include=br0)
  log=$tmp/calibrate.log
  timeout 120 ip netns exec "ssn-$id-sw" env "${env[@]}" mpirun --allow-run-as-root --oversubscribe -n 2 \
    -x PMIX_MCA_ptl_tcp_remote_connections -x PMIX_MCA_ptl_tcp_if_include --mca oob_tcp_if_include br0 \
    --mca btl tcp,self --mca btl_tcp_if_include 192.0.2.0/24 \
    "$net" exec "$id" rank "$bin" calibrate --cpu "$root/scenarios/real/two-workers.json" --out "$tmp/cal" \
    --repeats 10 --quiet </dev/null >"$log" 2>&1
  rc=$?
  gbps=$(grep -o '"bandwidth_gbps": [0-9.e+-]*' "$tmp/cal/network.json" 2>/dev/null | cut -d' ' -f2)
  if [[ $rc -ne 0 ]] && grep -q "built without" "$log"; then
    echo "real_net: this stalesim was built without MPI (the sanitizer build): the MPI ping-pong was not run"
  elif [[ $rc -ne 0 || -z $gbps ]]; then
    fail "MPI ping-pong in the namespaces: exit $rc: $(tail -3 "$log")"
  elif ! awk -v g="$gbps" 'BEGIN { exit !(g > 0.12 && g <= 0.205) }'; then
    fail "MPI bandwidth across a 200 Mbit/s link measured $gbps Gbit/s (expected 0.12-0.205)"
  else
    echo "real_net: MPI ping-pong across the shaped 200 Mbit/s link: $gbps Gbit/s"
  fi
else
  echo "real_net: no stalesim or mpirun given: the MPI ping-pong was not run"
fi

"$net" down "$id" --state "$tmp/$id.state" || fail "star down: exit $?"
[[ -z $(ours "$id") && $(links_of "$id") -eq 0 && ! -e $tmp/$id.state ]] || fail "star down left: $(ours "$id")"

# Racks: 5 hosts in 2 racks (3 and 2), uplinks at 50 Mbit/s both ways; a host of rack 0 reaches
# one of rack 1 across the spine.
"$net" up "$id" --hosts 5 --host-mbit 1000 --racks 2 --uplink-mbit 50 --state "$tmp/$id.state" >/dev/null ||
  fail "racks up: exit $?"
for r in 0 1; do
  for end in a b; do
    "$net" switch "$id" tc class show dev "up$r$end" | grep -q "rate 50Mbit" || fail "uplink $r$end not shaped"
  done
done
"$net" switch "$id" bridge link | grep "ss${id}p1" | grep -q "master tor1" || fail "host 1 is not in rack 1"
out=$("$net" exec "$id" 0 timeout 5 bash -c 'echo >/dev/tcp/192.0.2.2/9' 2>&1)
[[ $out == *"Connection refused"* ]] || fail "rack 0 cannot reach rack 1 across the spine: $out"
"$net" down "$id" --state "$tmp/$id.state" || fail "racks down: exit $?"
[[ -z $(ours "$id") && $(links_of "$id") -eq 0 ]] || fail "racks down left: $(ours "$id")"

# Per-host rates and explicit racks: host 1 at 300 Mbit/s, the others at 100; host 0 in rack 1
"$net" up "$id" --hosts 3 --host-mbit 100,300,100 --racks 2 --uplink-mbit 1000 --rack-of 1,1,0 \
  --state "$tmp/$id.state" >/dev/null || fail "up with per-host rates and --rack-of: exit $?"
"$net" exec "$id" 1 tc class show dev eth0 | grep -q "rate 300Mbit" || fail "host 1's own rate not applied"
"$net" switch "$id" tc class show dev "ss${id}p0" | grep -q "rate 100Mbit" || fail "host 0's rate not applied"
"$net" switch "$id" bridge link | grep "ss${id}p0" | grep -q "master tor1" || fail "--rack-of: host 0 is not in rack 1"
"$net" down "$id" --state "$tmp/$id.state" >/dev/null
"$net" up "$id" --hosts 3 --host-mbit 100,300 --state "$tmp/$id.state" 2>/dev/null
[[ $? -eq 2 && -z $(ours "$id") ]] || fail "two rates for three hosts were accepted"

# The owner's guard: a network whose owner dies (SIGKILL) is removed by the guard; down with
# another up's token leaves a network alone.
sleep 60 &
owner=$!
"$net" up "$id" --hosts 2 --host-mbit 100 --owner "$owner" --state "$tmp/$id.state" >/dev/null || fail "up --owner: exit $?"
"$net" down "$id" --state "$tmp/$id.state" --token 0000 >/dev/null
[[ -n $(ours "$id") ]] || fail "down with another up's token removed the network"
kill -9 "$owner"; wait "$owner" 2>/dev/null
for _ in $(seq 1 20); do [[ -z $(ours "$id") ]] && break; sleep 0.25; done
[[ -z $(ours "$id") && ! -e $tmp/$id.state ]] || fail "the guard did not remove the network of a killed owner"

# Killed halfway: what up had made is in its state file, and down removes it all.
"$net" up "$id" --hosts 60 --host-mbit 100 --racks 4 --uplink-mbit 100 --state "$tmp/$id.state" >/dev/null 2>&1 &
pid=$!
sleep 0.5
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
partial=$(ours "$id" | wc -l)
"$net" down "$id" --state "$tmp/$id.state" || fail "down after a killed up: exit $?"
[[ -z $(ours "$id") && $(links_of "$id") -eq 0 ]] || fail "down after a killed up ($partial namespaces) left: $(ours "$id")"
echo "real_net: up killed after 0.5 s with $partial namespaces made; down removed them all"

# Never by a name pattern: a namespace with our naming that up did not make survives down, and
# an up whose names collide with it refuses and removes only its own.
decoy="ssn-$id-h2"
ip netns add "$decoy" && made+=("$decoy")
"$net" up "$id" --hosts 2 --host-mbit 100 --state "$tmp/$id.state" >/dev/null || fail "up beside a decoy: exit $?"
"$net" down "$id" --state "$tmp/$id.state" >/dev/null
ip netns list | cut -d' ' -f1 | grep -qx "$decoy" || fail "down removed a namespace it did not make"
"$net" up "$id" --hosts 4 --host-mbit 100 --state "$tmp/$id.state" >/dev/null 2>&1
rc=$?
[[ $rc -eq 3 ]] || fail "up colliding with a namespace it did not make: exit $rc, expected 3"
ip netns list | cut -d' ' -f1 | grep -qx "$decoy" || fail "a colliding up removed the namespace it did not make"
[[ $(ours "$id") == "$decoy" ]] || fail "a refused up left namespaces of its own: $(ours "$id" | tr '\n' ' ')"

if [[ $fails -gt 0 ]]; then echo "real_net: $fails failed" >&2; exit 1; fi
echo "real_net: passed"
