#!/usr/bin/env bash
# The demo in real browsers: `sfu demo` (node + example signaling server) and three headless Chromium
# instances, all inside a private network namespace with no route out. Chromium's fake camera and a fake
# microphone fed from espeak-ng speech; then, against the demo's node, an H.264-only Chromium publisher
# (Tests/Browser/codec_test.py), a recording made from the page (Tests/Browser/recording_test.py) and a live stream to a local nginx-rtmp
# (Tests/Browser/streaming_test.py). Needs root (ip netns) and Debian's chromium.
# Usage: scripts/browser-test.sh [sfu binary, tested as it is; without one, builds .build/debug/sfu]
# (takes the page's screenshot in its work directory; SFU_UPDATE_DOCS=1 writes it to docs/demo.png instead, so
# a test run leaves the tree as it was)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
# Given a binary, test that one (its sfu-lab beside it); otherwise build the default ones.
if [ $# -ge 1 ]; then sfu=$1; else build_sfu debug; fi
[ -x "$sfu" ] || { echo "!! no sfu binary at $sfu" >&2; exit 1; }
peer_venv
work=$(mktemp -d)
speech "$work/speech.wav" "Good morning everyone. This is Alice, and I will keep talking about the plan for the release, the tests we ran and the numbers we measured. It went well, and there is more to say about the next steps, the open questions and the risks we see."
speech "$work/speech2.wav" "Hello, this is Bob. I have a question about the schedule and the budget for next quarter, and whether we can move the launch."
silence "$work/silence14.wav" 14
silence "$work/silence.wav" 120
sox "$work/silence14.wav" $(for _ in 1 2 3 4 5 6 7 8; do echo "$work/speech2.wav"; done) "$work/late.wav"
silence "$work/silence5.wav" 5  # Bob's page switches his microphone off once joined: nothing said before
sox "$work/silence5.wav" $(for _ in 1 2 3 4 5 6 7 8; do echo "$work/speech2.wav"; done) "$work/bob.wav"
sox "$work/speech.wav" "$work/speech.wav" "$work/speech.wav" "$work/speech.wav" "$work/speech.wav" "$work/speech.wav" "$work/alice.wav"
private_netns sfu-browser-$$ "$work"
# Who moderates is the signaling server's decision: the tests' moderators join with this key (Tests/Browser/demo_test.py).
export SFU_DEMO_MODERATOR_KEY=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
# streaming.rtmp_hosts: the live streaming test's nginx-rtmp is on loopback, which a moderator's URL may reach
# only when the operator lists it.
ip netns exec "$ns" "$sfu" demo --set workers=1 --set recording.directory="$work/recordings" --moderator-key "$SFU_DEMO_MODERATOR_KEY" \
  --set 'streaming.rtmp_hosts=["127.0.0.1:1935"]' > "$work/demo.log" 2>&1 &
demo_pid=$!
wait_for_url http://127.0.0.1:8000/
echo "== three headless Chromium browsers on the demo page: dominant speaker, slots, hard mute, renegotiation, ICE restart, lecture floor"
screenshot="$work/demo.png"
[ "${SFU_UPDATE_DOCS:-0}" = 1 ] && screenshot=docs/demo.png
if ! timeout 300 ip netns exec "$ns" "$venv/bin/python" Tests/Browser/demo_test.py \
    --speech "$work/alice.wav" --late "$work/late.wav" --silence "$work/silence.wav" --screenshot "$screenshot"; then
  echo "!! browser test failed; demo log:"; grep -v "room event" "$work/demo.log" | tail -40
  exit 1
fi
echo "== screen share: one Chromium presents, two talk in turns; the share stays through the speaker change"
if ! timeout 120 ip netns exec "$ns" "$venv/bin/python" Tests/Browser/screen_share_test.py \
    --alice "$work/alice.wav" --bob "$work/bob.wav" --silence "$work/silence.wav"; then
  echo "!! screen share test failed; demo log:"; grep -v "room event" "$work/demo.log" | tail -40
  exit 1
fi
echo "== H.264 through the node: an H.264-only Chromium publisher, a subscriber that decodes it, a VP8-only one told it cannot"
if ! timeout 120 ip netns exec "$ns" "$venv/bin/python" Tests/Browser/codec_test.py --speech "$work/alice.wav" --silence "$work/silence.wav"; then
  echo "!! codec test failed; demo log:"; grep -v "room event" "$work/demo.log" | tail -40
  exit 1
fi
echo "== recording: a moderator records two Chromium publishers from the page; every file probed, decoded, compared with the speech sent, then composed"
if ! timeout 180 ip netns exec "$ns" "$venv/bin/python" Tests/Browser/recording_test.py --speech "$work/alice.wav" --silence "$work/silence.wav" \
    --recordings "$work/recordings" --sfu "$sfu"; then
  echo "!! recording test failed; demo log:"; grep -v "room event" "$work/demo.log" | tail -40
  exit 1
fi
echo "== live streaming: three Chromium, the active talker's picture pushed over RTMP to nginx-rtmp, pulled back; the encoder killed and restarted"
if ! timeout 240 ip netns exec "$ns" "$venv/bin/python" Tests/Browser/streaming_test.py --speech "$work/alice.wav" --late "$work/late.wav" \
    --silence "$work/silence.wav" --work "$work"; then
  echo "!! live streaming test failed; demo log:"; grep -v "room event" "$work/demo.log" | tail -40
  exit 1
fi
# Ctrl-C or SIGTERM stops the demo (node and signaling server) within a few seconds.
kill -TERM "$demo_pid"
for _ in $(seq 1 50); do kill -0 "$demo_pid" 2>/dev/null || break; sleep 0.2; done
if kill -0 "$demo_pid" 2>/dev/null; then
  echo "!! sfu demo did not stop within 10 s of SIGTERM"; tail -5 "$work/demo.log"
  exit 1
fi
echo "sfu demo stopped on SIGTERM"
