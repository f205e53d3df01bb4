#!/usr/bin/env bash
# Interop with a real third-party client: aiortc (PyPI) publishes espeak-ng speech and subscribes through
# `sfu serve`'s control API, all inside a private network namespace with no route out.
# Needs root (ip netns). Usage: scripts/interop.sh [sfu binary, tested as it is; without one, builds .build/debug/sfu]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
# Given a binary, test that one (its sfu-lab beside it); otherwise build the default ones.
if [ $# -ge 1 ]; then sfu=$1; else build_sfu debug; fi
[ -x "$sfu" ] || { echo "!! no sfu binary at $sfu" >&2; exit 1; }
peer_venv
work=$(mktemp -d)
speech "$work/speech.wav" "Hello, this is a real client speaking through the selective forwarding unit. One two three four five."
speech "$work/speech2.wav" "Now it is my turn to talk about the quarterly results and the plans for next year."
silence "$work/silence.wav" 3
sox "$work/silence.wav" "$work/speech2.wav" "$work/late.wav"
private_netns sfu-interop-$$ "$work"
ip netns exec "$ns" "$sfu" serve --set workers=1 > "$work/serve.log" 2>&1 &
wait_for_url http://127.0.0.1:8080/healthz
echo "== aiortc participants through the node: speech and VP8, events, hard mute, slots, pins, REMB, drop, destroy, re-subscribe, lecture"
if ! timeout 180 ip netns exec "$ns" "$venv/bin/python" Tests/Interop/aiortc_interop.py \
    --speech "$work/speech.wav" --late-speech "$work/late.wav" --silence "$work/silence.wav"; then
  echo "!! interop failed; node log:"; tail -30 "$work/serve.log"
  exit 1
fi
