#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser and of the state machines behind them (the ICE-lite agent, the
# worker core's datagram path and its session API), with libFuzzer and AddressSanitizer.
# Usage: scripts/fuzz.sh [seconds per target] [target ...]   (default: SFU_FUZZ_SECONDS or 20 s, all targets)
# Targets run SFU_FUZZ_JOBS at a time (default: one per CPU). Corpora grow under .build-fuzz/corpus/<target>;
# a finding leaves its input in .build-fuzz/crashes and fails the run. The build is optimised for throughput
# (-O keeps Swift's bounds and overflow checks); the targets' own promises print their message either way, a
# trap in the node shows in the stack trace.
# Besides crashes, sanitizer reports and broken promises, libFuzzer is told to treat as findings:
#   -timeout=5         one input running 5 s: a hang or a runaway loop (the slowest real inputs, sessions with
#                      DTLS handshakes, take tens of milliseconds with ASan);
#   -malloc_limit_mb   one allocation larger than the target ever makes for real: an expansion from a length
#                      or count field. 1 MiB for the parsers and sessions (their largest real allocation is
#                      under 1 MiB), 4 MiB for edge (its worker core's 1.6 MiB datagram batch), 16 MiB for room
#                      (its harness's 6.4 MiB batch);
#   -rss_limit_mb=1536 the process past 1.5 GiB: a table that grows with every input (runs peak near 0.5 GiB).
# The `edge` target keeps its connected worker core across inputs (rebuilt every 128 inputs, a closed
# transport re-offered and reconnected): to replay one of its findings alone, run it with
# SFU_FUZZ_EDGE_RESET=1; SFU_FUZZ_TRACE=1 prints what each input does (edge and session).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
use_libsrtp
seconds=${1:-${SFU_FUZZ_SECONDS:-20}}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(rtp rtcp vp8 h264 vp9 opus stun sdp room edge session)
jobs=${SFU_FUZZ_JOBS:-$(nproc)}
runtime=$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")/lib/swift/clang/lib/linux/libclang_rt.fuzzer_no_main-x86_64.a
scratch=$PWD/.build-fuzz
build() {
  mkdir -p "$scratch"
  swift build --package-path Fuzz --scratch-path "$scratch" -c release \
    -Xswiftc -sanitize=address -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp \
    -Xswiftc -parse-as-library -Xlinker "$runtime" -Xlinker -lstdc++ > "$scratch/build.log" 2>&1
}
# An incremental build can miss a change to the root package's manifest: retry once from clean.
if ! build; then
  rm -rf "$scratch/debug" "$scratch/release" "$scratch/x86_64-unknown-linux-gnu" "$scratch/plugins"
  if ! build; then
    grep -E "error" "$scratch/build.log" | head -20
    echo "!! fuzz build failed (full log: $scratch/build.log)"
    exit 1
  fi
fi
bin="$scratch/release/sfu-fuzz"
mkdir -p "$scratch/crashes"
malloc_limit() { case $1 in room) echo 16 ;; edge) echo 4 ;; *) echo 1 ;; esac; }
fuzz() {
  local t=$1 corpus="$scratch/corpus/$1" rc=0
  mkdir -p "$corpus"
  SFU_FUZZ_TARGET=$t SFU_FUZZ_SEEDS="$corpus" "$bin" || { echo "$?" > "$scratch/$t.rc"; return; }
  SFU_FUZZ_TARGET=$t "$bin" -max_total_time="$seconds" -timeout=5 -malloc_limit_mb="$(malloc_limit "$t")" -rss_limit_mb=1536 \
    -max_len=4096 -artifact_prefix="$scratch/crashes/$t-" -print_final_stats=1 "$corpus" > "$scratch/$t.log" 2>&1 || rc=$?
  echo "$rc" > "$scratch/$t.rc"
}
echo "== fuzzing ${targets[*]} for ${seconds}s each, $jobs at a time"
for t in "${targets[@]}"; do rm -f "$scratch/$t.rc" "$scratch/$t.log"; done
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  fuzz "$t" &
done
wait
status=0
stat() { grep -aE "^stat::$1:" "$log" | awk '{print $2}'; }
for t in "${targets[@]}"; do
  log="$scratch/$t.log"
  touch "$log"
  cov=$(grep -aE "^#[0-9]+.*(DONE|pulse|NEW|REDUCE).*cov:" "$log" | tail -1 | sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+).*/cov \1 ft \2 corpus \3/' || true)
  echo "$t: $(stat number_of_executed_units) execs, $(stat average_exec_per_sec)/s, $cov, peak rss $(stat peak_rss_mb) MB"
  if [ "$(cat "$scratch/$t.rc" 2>/dev/null)" != 0 ]; then
    echo "!! $t: finding or error, see $log and $scratch/crashes"; tail -40 "$log"; status=1
  fi
done
exit $status
