#!/usr/bin/env bash
# Two nodes of a cluster as processes, each in a network namespace of its own, joined by a bridge: the
# registry (a private PostgreSQL server, reached over its Unix socket), a room spanning both nodes, a talker
# and a listener on node a and a listener on node b (real ICE, DTLS and SRTP from a third namespace), then
# kill -9 of node a - the talker's node and the room's home - and the talker rejoining on node b
# (`sfu-lab relay-bench`). Fails when nothing crosses the relay or the talker is not heard again after the
# kill. All addresses are private (10.214.0.0/24) and nothing is routed anywhere else. Needs root (ip netns).
# Usage: scripts/cluster-test.sh [sfu binary, tested as it is; sfu-lab beside it]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
if [ $# -ge 1 ]; then sfu=$1; else build_sfu debug; fi
lab=$(dirname "$sfu")/sfu-lab
[ -x "$sfu" ] && [ -x "$lab" ] || { echo "!! no sfu and sfu-lab at $(dirname "$sfu")" >&2; exit 1; }
prefix=sfucl-$$
cleanup() {
  for n in a b clients; do
    ip netns pids "$prefix-$n" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$prefix-$n" 2>/dev/null || true
  done
}
trap cleanup EXIT
# The clients' namespace holds the bridge (10.214.0.1); each node's namespace one end of a veth (10.214.0.11, .12).
ip netns add "$prefix-clients"
ip -n "$prefix-clients" link set lo up
ip -n "$prefix-clients" link add br0 type bridge
ip -n "$prefix-clients" addr add 10.214.0.1/24 dev br0
ip -n "$prefix-clients" link set br0 up
i=11
for n in a b; do
  ip netns add "$prefix-$n"
  ip -n "$prefix-$n" link set lo up
  ip -n "$prefix-clients" link add "v-$n" type veth peer name eth0 netns "$prefix-$n"
  ip -n "$prefix-clients" link set "v-$n" master br0
  ip -n "$prefix-clients" link set "v-$n" up
  ip -n "$prefix-$n" addr add "10.214.0.$i/24" dev eth0
  ip -n "$prefix-$n" link set eth0 up
  i=$((i + 1))
done
echo "== a room across two node processes in their own namespaces: relay latency, kill -9 of the home, the talker back on the survivor"
SFU_BENCH_NODE=$(realpath "$sfu") timeout 180 ip netns exec "$prefix-clients" "$lab" relay-bench --seconds 5 \
  --node-hosts 10.214.0.11,10.214.0.12 --namespaces "$prefix-a,$prefix-b" --client-host 10.214.0.1
