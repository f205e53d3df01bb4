#!/usr/bin/env bash
# Interop with a real third-party client: aiortc (PyPI) publishes espeak-ng speech and subscribes through
# `sfu serve`'s control API, all inside a private network namespace with no route out.
# Needs root (ip netns). Usage: scripts/interop.sh [sfu binary, tested as it is; without one, builds .build/debug/sfu]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
# Given a binary, test that one; otherwise build the default one.
if [ $# -ge 1 ]; then
  sfu=$1
else
  sfu=.build/debug/sfu
  swift build --product sfu 2>&1 | grep -E "error:|Build of product" || true
fi
[ -x "$sfu" ] || { echo "!! no sfu binary at $sfu" >&2; exit 1; }
source scripts/netns.sh
peer_venv
work=$(mktemp -d)
espeak-ng -w "$work/raw.wav" "Hello, this is a real client speaking through the selective forwarding unit. One two three four five."
sox "$work/raw.wav" -r 48000 -c 1 "$work/speech.wav"
espeak-ng -w "$work/raw2.wav" "Now it is my turn to talk about the quarterly results and the plans for next year."
sox -n -r 48000 -c 1 "$work/silence.wav" trim 0 3
sox "$work/raw2.wav" -r 48000 -c 1 "$work/speech2.wav"
sox "$work/silence.wav" "$work/speech2.wav" "$work/late.wav"
private_netns sfu-interop-$$ "$work"
ip netns exec "$ns" "$sfu" serve --set workers=1 > "$work/serve.log" 2>&1 &
wait_in_netns http://127.0.0.1:8080/healthz
echo "== aiortc participants through the node: speech and VP8, events, hard mute, slots, pins, REMB, drop, destroy, re-subscribe, lecture"
if ! timeout 180 ip netns exec "$ns" "$venv/bin/python" Tests/Interop/aiortc_interop.py \
    --speech "$work/speech.wav" --late-speech "$work/late.wav" --silence "$work/silence.wav"; then
  echo "!! interop failed; node log:"; tail -30 "$work/serve.log"
  exit 1
fi
