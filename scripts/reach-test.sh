#!/usr/bin/env bash
# Reaching the node from networks that block UDP: `sfu serve` in a private network namespace with a bridge, and
# headless Chromium browsers each in a namespace of its own joined to the bridge by a veth pair. alice's network
# is open; bob's drops UDP both ways (iptables in his namespace), so only ICE-TCP (the node's passive TCP
# candidate) reaches the node; carol's drops UDP too, and she uses a coturn server in its own namespace over
# TLS on port 443, which relays to the node over UDP. All addresses are private (10.214.0.0/24), nothing is
# routed anywhere else, and every namespace is deleted at the end (Tests/Browser/reach_test.py has the checks).
# dave has IPv6 beside IPv4 and his IPv4 media dropped: he reaches the dual-stack node over IPv6. erin is a
# headless Firefox ESR (WebDriver BiDi) on an open network, publishing and subscribing beside them.
# Needs root, Debian's chromium, iptables and coturn. About 15 s.
# Usage: scripts/reach-test.sh [sfu binary, tested as it is; without one, builds .build/debug/sfu]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
sfu=""
if [ $# -ge 1 ] && [ "$1" != "--" ]; then sfu=$1; shift; fi
[ "${1:-}" = "--" ] && shift
if [ -z "$sfu" ]; then build_sfu debug sfu; fi
[ -x "$sfu" ] || { echo "!! no sfu binary at $sfu" >&2; exit 1; }
command -v iptables > /dev/null || { echo "!! iptables missing (scripts/install-deps.sh --tests installs it)" >&2; exit 1; }
command -v turnserver > /dev/null || { echo "!! coturn missing (scripts/install-deps.sh --tests installs it)" >&2; exit 1; }
peer_venv
work=$(mktemp -d)
speech "$work/a48.wav" "Good morning everyone. This is Alice, and I am talking from an open network, over UDP, as usual."
speech "$work/b48.wav" "Hello, this is Bob. My network blocks UDP, so I reach the node over TCP, and you should hear me all the same."

prefix=sfurc$$
node_ns=$prefix-node
names="alice bob carol turn dave erin"
cleanup() {
  for n in $names node; do ip netns pids "$prefix-$n" 2>/dev/null | xargs -r kill -TERM 2>/dev/null || true; done
  sleep 1
  for n in $names node; do
    ip netns pids "$prefix-$n" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$prefix-$n" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
# node 10.214.0.1 (the bridge), alice .11, bob .12, carol .13, turn .14, dave .15; the bridge and dave also have
# IPv6 (fd00:214::1 and ::15; nodad: usable at once), and dave's IPv4 media is dropped, so he reaches the node
# over IPv6 only (the page still comes over IPv4).
bridged_netns "$prefix" node 10.214.0 $names
for n in bob carol; do
  ip netns exec "$prefix-$n" iptables -A OUTPUT -p udp -j DROP
  ip netns exec "$prefix-$n" iptables -A INPUT -p udp -j DROP
done
ip -n "$node_ns" addr add fd00:214::1/64 dev br0 nodad
ip -n "$prefix-dave" addr add fd00:214::15/64 dev eth0 nodad
ip netns exec "$prefix-dave" iptables -A OUTPUT -p udp -j DROP
ip netns exec "$prefix-dave" iptables -A OUTPUT -p tcp -d 10.214.0.1 --dport 10000 -j DROP

# coturn over TLS on 443 with a self-signed certificate, which carol's Chromium is told to accept
# (--ignore-certificate-errors: Chromium checks a TURN server's certificate as it checks a web server's, and a
# deployment has a real one), long-term credentials, relaying only to the node. Its relay ports are its own
# namespace's.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=turn.test" \
  -keyout "$work/turn.key" -out "$work/turn.pem" 2> /dev/null
cat > "$work/turnserver.conf" <<CONF
listening-ip=10.214.0.14
relay-ip=10.214.0.14
tls-listening-port=443
listening-port=3478
no-udp
no-dtls
cert=$work/turn.pem
pkey=$work/turn.key
lt-cred-mech
user=sfu:sfu-test
realm=sfu.test
fingerprint
no-cli
no-multicast-peers
allowed-peer-ip=10.214.0.1
denied-peer-ip=0.0.0.0-255.255.255.255
min-port=49152
max-port=49252
log-file=$work/turn.log
simple-log
verbose
CONF
ip netns exec "$prefix-turn" turnserver -c "$work/turnserver.conf" > /dev/null 2>&1 &
ns=$node_ns
ip netns exec "$node_ns" "$sfu" serve --set workers=1 --set 'media.listen=["10.214.0.1:10000", "[fd00:214::1]:10000"]' \
  > "$work/node.log" 2>&1 &
wait_for_url http://127.0.0.1:8080/healthz
for _ in $(seq 50); do ip netns exec "$prefix-turn" ss -ltn | grep -q ":443 " && break; sleep 0.1; done
echo "== Reach: Chromium over UDP, over ICE-TCP with UDP blocked, through coturn over TLS/443 with UDP blocked, and over IPv6"
status=0
timeout 180 ip netns exec "$node_ns" "$venv/bin/python" Tests/Browser/reach_test.py \
  --origin http://10.214.0.1:8801 --netns "$prefix" --speech "$work/a48.wav" "$work/b48.wav" \
  --turn "turns:10.214.0.14:443?transport=tcp" --carol-flag=--ignore-certificate-errors --ipv6 --firefox "$@" || status=$?
if [ "$status" -ne 0 ]; then
  echo "!! reach test failed; node log:"; grep -v "room event" "$work/node.log" | tail -30
  echo "!! coturn log:"; grep -v "^0: :" "$work/turn.log" 2>/dev/null | tail -20 || true
fi
exit "$status"
