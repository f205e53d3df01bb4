#!/usr/bin/env bash
# Real browsers over shaped links: `sfu serve` in a private network namespace with a bridge, and three headless
# Chromium (two publishers, alice and bob, and a subscriber) each in a namespace of its own, joined to the
# bridge by a veth pair. All addresses are private (10.213.0.0/24), nothing is routed anywhere else, and every
# namespace is deleted at the end. The test caps the subscriber's downlink with `tc ... tbf` on the node's side
# of its veth and drops 5 % of what alice sends with iptables as it reaches the node's namespace (this kernel
# has no netem), and checks what the node's estimate, ABWD and NACK/RTX make of it, from Chromium's getStats and
# the node's events and stats (Tests/Browser/shaped_test.py). Then alice publishes a 1280x720 camera as three
# simulcast layers to bob and the subscriber, whose downlink is capped for 15 s: each must decode the layer its
# link fits. Needs root, Debian's chromium, tc and iptables. About 115 s (the simulcast part ~25 s).
# Usage: scripts/shaped-test.sh [sfu binary, tested as it is; without one, builds .build/debug/sfu]
#        [-- extra arguments for shaped_test.py, e.g. -- --rounds 10]
# (draws the chart of the measured trace in its work directory; SFU_UPDATE_DOCS=1 writes it to
# docs/abwd-shaped.svg instead, so a test run leaves the tree as it was; SFU_SHAPED_TRACE=file keeps the JSON
# trace, and file.simulcast.json the simulcast part's)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
sfu=""
if [ $# -ge 1 ] && [ "$1" != "--" ]; then sfu=$1; shift; fi
[ "${1:-}" = "--" ] && shift
if [ -z "$sfu" ]; then build_sfu debug sfu; fi
[ -x "$sfu" ] || { echo "!! no sfu binary at $sfu" >&2; exit 1; }
command -v iptables > /dev/null || { echo "!! iptables missing (scripts/install-deps.sh --tests installs it)" >&2; exit 1; }
peer_venv
work=$(mktemp -d)
speech "$work/a48.wav" "Good morning everyone. This is Alice, and I will keep talking about the plan for the release, the tests we ran and the numbers we measured. It went well, and there is more to say about the next steps."
speech "$work/b48.wav" "Hello, this is Bob. I have a question about the schedule and the budget for next quarter, and whether we can move the launch, and who will pay for it."

# The namespaces: <prefix>-node holds the node and the bridge (10.213.0.1); each browser's namespace holds one
# end of a veth (10.213.0.1x), the other end is a port of the bridge named after the browser.
prefix=sfush$$
node_ns=$prefix-node
cleanup() {
  for n in alice bob sub node; do
    ip netns pids "$prefix-$n" 2>/dev/null | xargs -r kill -TERM 2>/dev/null || true
  done
  sleep 1
  for n in alice bob sub node; do
    ip netns pids "$prefix-$n" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$prefix-$n" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
bridged_netns "$prefix" node 10.213.0 alice bob sub
ns=$node_ns
ip netns exec "$node_ns" "$sfu" serve --set workers=1 --set media.listen=10.213.0.1:10000 > "$work/node.log" 2>&1 &
wait_for_url http://127.0.0.1:8080/healthz
echo "== Chromium over shaped links: two publishers and a subscriber in namespaces of their own; downlink caps, uplink loss; simulcast"
chart="$work/abwd-shaped.svg"
[ "${SFU_UPDATE_DOCS:-0}" = 1 ] && chart=docs/abwd-shaped.svg
status=0
timeout 300 ip netns exec "$node_ns" "$venv/bin/python" Tests/Browser/shaped_test.py \
  --origin http://10.213.0.1:8800 --netns "$prefix" --sub-dev v-sub --speech "$work/a48.wav" "$work/b48.wav" \
  --alice-addr 10.213.0.11 --chart "$chart" ${SFU_SHAPED_TRACE:+--trace "$SFU_SHAPED_TRACE"} "$@" || status=$?
if [ "$status" -ne 0 ]; then
  echo "!! shaped-link test failed; node log:"; grep -v "room event" "$work/node.log" | tail -30
fi
exit "$status"
