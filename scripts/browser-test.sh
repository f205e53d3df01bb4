#!/usr/bin/env bash
# The demo in real browsers: `sfu demo` (node + example signaling server) and three headless Chromium
# instances, all inside a private network namespace with no route out. Chromium's fake camera and a fake
# microphone fed from espeak-ng speech. Needs root (ip netns) and Debian's chromium.
# Usage: scripts/browser-test.sh [path to the sfu binary]   (writes the page's screenshot to docs/demo.png)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
sfu=${1:-.build/debug/sfu}
swift build --product sfu 2>&1 | grep -E "error:|Build of product" || true
source scripts/netns.sh
peer_venv
work=$(mktemp -d)
espeak-ng -w "$work/raw.wav" "Good morning everyone. This is Alice, and I will keep talking about the plan for the release, the tests we ran and the numbers we measured. It went well, and there is more to say about the next steps, the open questions and the risks we see."
sox "$work/raw.wav" -r 48000 -c 1 "$work/speech.wav"
espeak-ng -w "$work/raw2.wav" "Hello, this is Bob. I have a question about the schedule and the budget for next quarter, and whether we can move the launch."
sox -n -r 48000 -c 1 "$work/silence14.wav" trim 0 14
sox -n -r 48000 -c 1 "$work/silence.wav" trim 0 120
sox "$work/raw2.wav" -r 48000 -c 1 "$work/speech2.wav"
sox "$work/silence14.wav" $(for _ in 1 2 3 4 5 6 7 8; do echo "$work/speech2.wav"; done) "$work/late.wav"
sox "$work/speech.wav" "$work/speech.wav" "$work/speech.wav" "$work/speech.wav" "$work/speech.wav" "$work/speech.wav" "$work/alice.wav"
private_netns sfu-browser-$$ "$work"
ip netns exec "$ns" "$sfu" demo --set workers=1 > "$work/demo.log" 2>&1 &
wait_in_netns http://127.0.0.1:8000/
echo "== three headless Chromium browsers on the demo page: dominant speaker, slots, hard mute, lecture floor"
mkdir -p docs
if ! timeout 300 ip netns exec "$ns" "$venv/bin/python" Tests/Browser/demo_test.py \
    --speech "$work/alice.wav" --late "$work/late.wav" --silence "$work/silence.wav" --screenshot docs/demo.png; then
  echo "!! browser test failed; demo log:"; grep -v "room event" "$work/demo.log" | tail -40
  exit 1
fi
