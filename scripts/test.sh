#!/usr/bin/env bash
# The test command: installs what is needed, runs every test, runs real aiortc clients through `sfu serve` in
# a private network namespace (needs root; SFU_INTEROP=0 skips it), soaks a node with simulated clients joining
# and leaving with garbage mixed in (SFU_SOAK_CYCLES, 12 by default; 0 skips it), attacks a node with
# hostile clients while a victim room talks (`sfu hostile`; SFU_HOSTILE=0 skips it), fuzzes the control API
# against docs/openapi.yaml with schemathesis (SFU_API_FUZZ=0 skips it), runs the demo in three headless
# Chromium browsers (SFU_BROWSER=0 skips it), runs Chromium publishers and a subscriber over shaped links (each
# in a network namespace of its own: a capped downlink, a lossy uplink; SFU_SHAPED=0 skips it), runs a short
# `sfu bench --against janus` to check the load generator against both servers (SFU_JANUS=0 skips it), then
# fuzzes each parser, the room, the ICE agent and the worker core's datagrams and sessions for a bounded time
# (SFU_FUZZ_SECONDS per target, 20 by default; 0 skips fuzzing). Before the real clients, it checks the malloc
# counts of the per-packet benchmarks against Benchmarks/Thresholds (scripts/bench-thresholds.sh, a release
# build of the benchmark package; SFU_BENCH_THRESHOLDS=0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
source scripts/lib.sh
use_libsrtp
log=$(mktemp)
set +e
swift test 2>&1 | tee "$log" | grep -vE "^(􀟈|◇|↳) |^Test Suite|^Test Case|^✔ Test [a-z]" 
status=${PIPESTATUS[0]}
set -e
summary=$(grep -E "Test run with [0-9]+ tests?" "$log" | tail -1)
failed=$(grep -cE "^✘ Test .* failed" "$log" || true)
bench_status=0
if [ "${SFU_BENCH_THRESHOLDS:-1}" != "0" ]; then
  scripts/bench-thresholds.sh || bench_status=$?
fi
interop_status=0
if [ "${SFU_INTEROP:-1}" != "0" ]; then
  scripts/interop.sh || interop_status=$?
fi
soak_status=0
if [ "${SFU_SOAK_CYCLES:-12}" != "0" ]; then
  echo "== soak: rooms of simulated clients join, talk and leave ${SFU_SOAK_CYCLES:-12} times, with garbage datagrams"
  build_sfu debug
  timeout 600 "$sfu" soak --cycles "${SFU_SOAK_CYCLES:-12}" || soak_status=$?
fi
hostile_status=0
if [ "${SFU_HOSTILE:-1}" != "0" ]; then
  echo "== hostile: stale RTCP, offer storms, vanished and stalled clients, replays, NACK/SSRC/RTCP abuse, floods, API caps, renegotiations after wraps and switches, SSRC moves, extension ids, while a victim room talks"
  build_sfu debug
  timeout 600 "$sfu" hostile || hostile_status=$?
fi
browser_status=0
if [ "${SFU_BROWSER:-1}" != "0" ]; then
  scripts/browser-test.sh || browser_status=$?
fi
shaped_status=0
if [ "${SFU_SHAPED:-1}" != "0" ]; then
  scripts/shaped-test.sh || shaped_status=$?
fi
janus_status=0
if [ "${SFU_JANUS:-1}" != "0" ]; then
  scripts/bench-check.sh || janus_status=$?
fi
api_fuzz_status=0
if [ "${SFU_API_FUZZ:-1}" != "0" ]; then
  scripts/api-fuzz.sh || api_fuzz_status=$?
fi
fuzz_status=0
if [ "${SFU_FUZZ_SECONDS:-20}" != "0" ]; then
  scripts/fuzz.sh "${SFU_FUZZ_SECONDS:-20}" || fuzz_status=$?
fi
echo "$summary"
total=$(echo "$summary" | grep -oE "with [0-9]+ tests?" | grep -oE "[0-9]+" || echo 0)
passed=$(( status == 0 ? total : total - failed ))
echo "swift-testing: $passed passed, $failed failed"
[ "$status" -eq 0 ] && [ "$bench_status" -eq 0 ] && [ "$fuzz_status" -eq 0 ] && [ "$interop_status" -eq 0 ] && [ "$soak_status" -eq 0 ] && [ "$hostile_status" -eq 0 ] && [ "$api_fuzz_status" -eq 0 ] && [ "$browser_status" -eq 0 ] && [ "$shaped_status" -eq 0 ] && [ "$janus_status" -eq 0 ]
