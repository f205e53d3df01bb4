#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser and of the room, with libFuzzer and AddressSanitizer.
# Usage: scripts/fuzz.sh [seconds per target] [target ...]   (default: 30 s, all targets)
# Corpora grow under .build-fuzz/corpus/<target>; a crash leaves its input in .build-fuzz/crashes and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
use_libsrtp
seconds=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(rtp rtcp vp8 opus stun sdp room)
runtime=$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")/lib/swift/clang/lib/linux/libclang_rt.fuzzer_no_main-x86_64.a
scratch=$PWD/.build-fuzz
build() {
  mkdir -p "$scratch"
  swift build --package-path Fuzz --scratch-path "$scratch" -c debug \
    -Xswiftc -sanitize=address -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp \
    -Xswiftc -parse-as-library -Xlinker "$runtime" -Xlinker -lstdc++ > "$scratch/build.log" 2>&1
}
# An incremental build can miss a change to the root package's manifest: retry once from clean.
if ! build; then
  rm -rf "$scratch/debug" "$scratch/x86_64-unknown-linux-gnu" "$scratch/plugins"
  if ! build; then
    grep -E "error" "$scratch/build.log" | head -20
    echo "!! fuzz build failed (full log: $scratch/build.log)"
    exit 1
  fi
fi
bin="$scratch/debug/sfu-fuzz"
mkdir -p "$scratch/crashes"
status=0
for t in "${targets[@]}"; do
  corpus="$scratch/corpus/$t"
  mkdir -p "$corpus"
  SFU_FUZZ_TARGET=$t SFU_FUZZ_SEEDS="$corpus" "$bin"
  echo "== fuzzing $t for ${seconds}s"
  if ! SFU_FUZZ_TARGET=$t "$bin" -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=4096 \
      -artifact_prefix="$scratch/crashes/$t-" -print_final_stats=1 "$corpus" > "$scratch/$t.log" 2>&1; then
    echo "!! $t: crash or error, see $scratch/$t.log and $scratch/crashes"; tail -40 "$scratch/$t.log"; status=1
  fi
  grep -E "stat::number_of_executed_units|cov:" "$scratch/$t.log" | tail -2
done
exit $status
