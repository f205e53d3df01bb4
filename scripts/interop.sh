#!/usr/bin/env bash
# Interop with a real third-party client: aiortc (PyPI) publishes espeak-ng speech and subscribes through
# `sfu serve`'s control API, all inside a private network namespace with no route out.
# Needs root (ip netns). Usage: scripts/interop.sh [path to the sfu binary]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
sfu=${1:-.build/debug/sfu}
swift build --product sfu 2>&1 | grep -E "error:|Build of product" || true
venv=.venv-interop
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import aiortc, websockets" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --only-binary=:all: aiortc websockets
fi
work=$(mktemp -d)
espeak-ng -w "$work/raw.wav" "Hello, this is a real client speaking through the selective forwarding unit. One two three four five."
sox "$work/raw.wav" -r 48000 -c 1 "$work/speech.wav"
espeak-ng -w "$work/raw2.wav" "Now it is my turn to talk about the quarterly results and the plans for next year."
sox -n -r 48000 -c 1 "$work/silence.wav" trim 0 3
sox "$work/raw2.wav" -r 48000 -c 1 "$work/speech2.wav"
sox "$work/silence.wav" "$work/speech2.wav" "$work/late.wav"
ns=sfu-interop-$$
ip netns add "$ns"
cleanup() {
  ip netns pids "$ns" 2>/dev/null | xargs -r kill -TERM 2>/dev/null || true
  sleep 1
  ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
ip netns exec "$ns" ip link set lo up
ip netns exec "$ns" "$sfu" serve --set workers=1 > "$work/serve.log" 2>&1 &
for _ in $(seq 1 50); do
  ip netns exec "$ns" python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz')" 2>/dev/null && break
  sleep 0.2
done
echo "== aiortc participants through the node: speech and VP8, events, hard mute, slots, pins, REMB, drop, destroy, lecture"
if ! timeout 180 ip netns exec "$ns" "$venv/bin/python" Tests/Interop/aiortc_interop.py \
    --speech "$work/speech.wav" --late-speech "$work/late.wav" --silence "$work/silence.wav"; then
  echo "!! interop failed; node log:"; tail -30 "$work/serve.log"
  exit 1
fi
