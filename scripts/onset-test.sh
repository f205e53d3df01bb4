#!/usr/bin/env bash
# A new talker's first words in a real Chromium listener (issue 28): `sfu demo` in a private network namespace and
# three headless Chromium on its page - alice talks and falls silent, lena listens with one talker slot, bob starts
# talking 14 s into his microphone file - run twice, with the node's onset replay (`talkers.onset_replay_ms`, its
# default 500) and without it (0, the node before issue 28). Tests/Browser/onset_test.py records what lena's slot
# plays and reads her getStats: with the replay she must hear bob from his first word (within 30 ms) and the
# node count the replay; without it the node must replay nothing. How far the word is cut without it, and how
# lena's jitter buffer grows and recovers, are measured and printed (Benchmarks/README.md quotes them). Each run's figures go to $ONSET_OUT (default: a temporary directory).
# ONSET_NODE_SET="key=value ..." sets more node keys for a measurement (e.g. talkers.speaking_min_samples=12 makes
# the detector slow, so the burst is long), ONSET_REPLAYS the replay values to run (default "500 0").
# Needs root (ip netns) and Debian's chromium. About 70 s.
# Usage: scripts/onset-test.sh [sfu binary, tested as it is; without one, builds .build/debug/sfu]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
if [ $# -ge 1 ]; then sfu=$1; else build_sfu debug sfu; fi
[ -x "$sfu" ] || { echo "!! no sfu binary at $sfu" >&2; exit 1; }
peer_venv
work=$(mktemp -d)
out=${ONSET_OUT:-$work}
mkdir -p "$out"
speech "$work/a.wav" "Good morning everyone. This is Alice with the news of the week."
speech "$work/b.wav" "Seven sharp questions about the budget, and then the schedule for the launch."
silence "$work/silence.wav" 120
silence "$work/silence14.wav" 14
sox "$work/a.wav" "$work/a.wav" "$work/silence.wav" -b 16 "$work/alice.wav"
sox "$work/silence14.wav" "$work/b.wav" "$work/b.wav" "$work/silence.wav" -b 16 "$work/bob.wav"
private_netns sfu-onset-$$ "$work"
status=0
extra=()
for s in ${ONSET_NODE_SET:-}; do extra+=(--set "$s"); done
for replay in ${ONSET_REPLAYS:-500 0}; do
  expect=heard
  [ "$replay" = 0 ] && expect=clipped
  echo "== onset replay ${replay} ms: lena (one talker slot) hears alice, then bob's first words"
  ip netns exec "$ns" "$sfu" demo --set workers=1 --set talkers.onset_replay_ms=$replay "${extra[@]}" > "$work/demo-$replay.log" 2>&1 &
  demo_pid=$!
  wait_for_url http://127.0.0.1:8000/
  if ! timeout 120 ip netns exec "$ns" "$venv/bin/python" Tests/Browser/onset_test.py --alice "$work/alice.wav" --bob "$work/bob.wav" \
      --bob-onset 14 --silence "$work/silence.wav" --json "$out/onset-$replay.json" --expect "$expect"; then
    echo "!! onset test with replay $replay ms failed; demo log:"; grep -v "room event" "$work/demo-$replay.log" | tail -20
    status=1
  fi
  kill -TERM "$demo_pid"
  for _ in $(seq 1 50); do kill -0 "$demo_pid" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$demo_pid" 2>/dev/null; then
    echo "!! sfu demo did not stop within 10 s of SIGTERM"; tail -5 "$work/demo-$replay.log"
    kill -KILL "$demo_pid"; status=1
  fi
done
exit $status
