#!/usr/bin/env bash
# Two nodes of a cluster as processes, each in a network namespace of its own, joined by a bridge, sharing a
# registry (a private PostgreSQL server, reached over its Unix socket):
# 1. `sfu-lab relay-bench`: a room spanning both nodes, a talker and a listener on node a and a listener on
#    node b (real ICE, DTLS and SRTP from a third namespace), talkers on both nodes taking turns, SIGTERM of
#    node b while it relays the room (it must exit with status 0 after saying node_lost of the room) and its
#    restart, then kill -9 of node a - the talker's node and the room's home - and the talker rejoining on node b
#    when b says node_lost (and a room only a hosted, rejoined on b); the defaults' heartbeat timeout; the link
#    between the nodes loses 1 % each way and is capped (iptables, tc tbf);
# 2. Chromium: the example signaling server (`sfu signaling`) before two nodes that take one and two participants,
#    two headless Chromium on its demo page in one room - Alice talking, Bob silent - placed on different nodes,
#    Bob hearing Alice through the relay; then kill -9 of Alice's node, her page told to rejoin, placed on the
#    survivor, and heard by Bob again (Tests/Browser/cluster_test.py).
# Fails when nothing crosses the relay, a SIGTERM does not stop a node cleanly, or the talker is not heard again
# after the kill. All addresses are
# private (10.214.0.0/24) and nothing is routed anywhere else. Needs root (ip netns) and Debian's chromium.
# Usage: scripts/cluster-test.sh [sfu binary, tested as it is; sfu-lab beside it]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
if [ $# -ge 1 ]; then sfu=$1; else build_sfu debug; fi
lab=$(dirname "$sfu")/sfu-lab
[ -x "$sfu" ] && [ -x "$lab" ] || { echo "!! no sfu and sfu-lab at $(dirname "$sfu")" >&2; exit 1; }
prefix=sfucl-$$
pgdir=
work=
cleanup() {
  [ -n "$work" ] &&   if [ -n "$pgdir" ]; then
    runuser -u postgres -- "$pgbin/pg_ctl" -D "$pgdir/data" -m immediate -w stop > /dev/null 2>&1 || true
    rm -rf "$pgdir"
  fi
  for n in a b clients; do
    ip netns pids "$prefix-$n" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$prefix-$n" 2>/dev/null || true
  done
}
trap cleanup EXIT
# The clients' namespace holds the bridge (10.214.0.1); each node's namespace one end of a veth (10.214.0.11, .12).
bridged_netns "$prefix" clients 10.214.0 a b
echo "== a room across two node processes in their own namespaces: relay latency, talkers taking turns on both, kill -9 of the home, the talker back on the survivor"
# The link between the two "data centres": each node drops 1 % of the datagrams it gets from the other, and
# each node's link is capped at 50 Mbit/s (token bucket; a relay here carries a few hundred kbit/s).
for pair in "a 12" "b 11"; do
  set -- $pair
  ip netns exec "$prefix-$1" iptables -A INPUT -p udp -s "10.214.0.$2" -m statistic --mode random --probability 0.01 -j DROP
  ip netns exec "$prefix-$1" tc qdisc add dev eth0 root tbf rate 50mbit burst 64kb latency 50ms
done
# The defaults (a 3 s heartbeat timeout): what an operator runs.
SFU_BENCH_NODE=$(realpath "$sfu") timeout 240 ip netns exec "$prefix-clients" "$lab" relay-bench --seconds 5 \
  --node-hosts 10.214.0.11,10.214.0.12 --namespaces "$prefix-a,$prefix-b" --client-host 10.214.0.1
for n in a b; do
  ip netns exec "$prefix-$n" iptables -F INPUT
  ip netns exec "$prefix-$n" tc qdisc del dev eth0 root
done

echo "== Chromium on two nodes: a room across them through the example signaling server, kill -9 of the talker's node"
peer_venv
work=$(mktemp -d)
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
pgdir=$(mktemp -d /tmp/sfu-cluster-pg.XXXXXX)
chown postgres:postgres "$pgdir"
runuser -u postgres -- "$pgbin/initdb" -D "$pgdir/data" -A trust -U postgres --no-sync -E UTF8 > /dev/null
runuser -u postgres -- "$pgbin/pg_ctl" -D "$pgdir/data" -l "$pgdir/server.log" -w -t 60 start \
  -o "-k $pgdir -c listen_addresses= -p 5432 -c fsync=off" > /dev/null
registry="postgres://postgres@/postgres?host=$pgdir&port=5432"
key=cluster-test-$RANDOM$RANDOM
speech "$work/speech.wav" "Good morning everyone. This is Alice, and I will keep talking about the plan for the release, the tests we ran and the numbers we measured."
sox "$work/speech.wav" "$work/speech.wav" "$work/speech.wav" "$work/speech.wav" "$work/speech.wav" "$work/speech.wav" "$work/alice.wav"
silence "$work/silence.wav" 120
# Node a takes one participant, b two: Alice (first) is placed on a, Bob spills to b, and after a is killed
# Alice, rejoining, is placed on b beside Bob.
declare -A pid capacity=([a]=1 [b]=2)
i=11
for n in a b; do
  ip netns exec "$prefix-$n" "$sfu" serve --set workers=1 --set log.level=info \
    --set api.listen=10.214.0.$i:8080 --set api.key="$key" --set media.listen=10.214.0.$i:10000 \
    --set cluster.registry="$registry" --set cluster.node_id=$n --set cluster.control_url=http://10.214.0.$i:8080 \
    --set cluster.capacity=${capacity[$n]} > "$work/node-$n.log" 2>&1 &
  pid[$n]=$!
  disown  # the cleanup kills it: no job notice
  i=$((i + 1))
done
ip netns exec "$prefix-clients" "$lab" signaling --node http://10.214.0.11:8080 --key "$key" --host 10.214.0.1 --port 8000 \
  > "$work/signaling.log" 2>&1 &
disown
ns=$prefix-clients
wait_for_url http://10.214.0.1:8000/ 20
# Both nodes alive in the registry (registered and heartbeating) before anyone is placed: Alice must land on a.
alive=0
for _ in $(seq 1 150); do
  alive=$(runuser -u postgres -- "$pgbin/psql" -h "$pgdir" -p 5432 -U postgres -d postgres -tAc \
    "SELECT count(*) FROM sfu_nodes WHERE heartbeat_at > now() - interval '2 seconds'" 2>/dev/null || echo 0)
  [ "$alive" = 2 ] && break
  sleep 0.2
done
if [ "$alive" != 2 ]; then
  echo "!! the two nodes did not both register within 30 s"
  for f in node-a node-b; do echo "-- $f"; tail -20 "$work/$f.log"; done
  exit 1
fi
if ! timeout 240 ip netns exec "$prefix-clients" "$venv/bin/python" Tests/Browser/cluster_test.py --page http://10.214.0.1:8000/ \
    --nodes a=http://10.214.0.11:8080,b=http://10.214.0.12:8080 --pids "a=${pid[a]},b=${pid[b]}" --key "$key" \
    --speech "$work/alice.wav" --silence "$work/silence.wav"; then
  echo "!! cluster browser test failed; logs:"
  for f in node-a node-b signaling; do echo "-- $f"; grep -v "room event\|event stream dropped" "$work/$f.log" | tail -25; done
  exit 1
fi
rm -rf "$work"
