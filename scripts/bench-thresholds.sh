#!/usr/bin/env bash
# Checks the malloc counts of the per-packet benchmarks (Benchmarks/, package-benchmark) against the counts
# stored in Benchmarks/Thresholds: forwarding one audio or video packet to 10 subscribers (with SRTP and with
# the null cipher; and through a whole worker core), SRTP protect and unprotect, RTP parsing, H.264 and VP9
# payload parsing, audio level, handling a subscriber's transport-cc feedback, and the talker checks every
# room runs every 40 ms. Malloc counts are deterministic, unlike time, so any rise above a stored count fails
# (and so does a fall: store the new, lower count).
# Only mallocCountTotal is measured and stored; no time is ever checked.
# Usage: scripts/bench-thresholds.sh            check (CI)
#        scripts/bench-thresholds.sh --update   store the counts of this build (after a change that
#                                               legitimately alters them; commit the files with the reason)
# Always on libsrtp2 built on OpenSSL, as the node runs: the stored counts are that backend's (Debian's NSS one
# allocates in every SRTP call), and the benchmarks stop if they linked another one. From a fresh clone: a
# release build of the benchmark package (about 200 CPU-seconds) and the run (about 40 s); 6.4 minutes of wall
# time on a 2-core machine that other builds were loading, 40 s once built.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
mode=check
case "${1:-}" in
  "") ;;
  --update) mode=update ;;
  *) echo "usage: $0 [--update]" >&2; exit 2 ;;
esac
SFU_SRTP=openssl use_libsrtp
export SFU_BENCH_SRTP_BACKEND=openssl
target=EngineBenchmarks
filter='Forward.*|SRTP.*|Parse RTP header.*|Parse H.264 and VP9 payloads.*|Audio level.*|Handle one transport-cc feedback.*|Talker speaking check.*'
cd Benchmarks
echo "== benchmark thresholds: malloc counts per iteration of $target ($filter) against Benchmarks/Thresholds"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
bench() {
  if ! swift package "$@" > "$log" 2>&1; then
    grep -vE "^\[[0-9]+/[0-9]+\]|^(Compiling|Building|Write|Linking|Emitting|Wrapping|Fetch|Creating|Working) " "$log" | tail -60 >&2
    echo "!! swift package $* failed" >&2
    exit 1
  fi
}
# The benchmarks the filter selects, by name (the tool's list, matched here as it matches: the whole name).
bench benchmark list --target "$target"
names=$(sed -n '/available benchmarks:/,$p' "$log" | tail -n +2 | grep -v '^$' | grep -xE "$filter" || true)
[ -n "$names" ] || { cat "$log" >&2; echo "!! no benchmark of $target matches $filter" >&2; exit 1; }
if [ "$mode" = update ]; then
  out=$(mktemp -d)
  trap 'rm -f "$log"; rm -rf "$out"' EXIT
  bench --allow-writing-to-directory "$out" benchmark thresholds update --target "$target" --filter "$filter" \
    --metric mallocCountTotal --path "$out" --no-progress
  # `thresholds update` writes names with spaces and slashes made underscores, which `thresholds check` (1.38)
  # never reads (it looks for the name as it is; ordo-one/benchmark issues 301, 373): store them as check reads.
  while IFS= read -r name; do
    written="$out/$target.$(echo "$name" | tr ' /' '__').p90.json"
    [ -f "$written" ] || { echo "!! thresholds update wrote nothing for '$name'" >&2; exit 1; }
    mv "$written" "Thresholds/$target.$name.p90.json"
    echo "$name: $(grep -oE '[0-9]+' "Thresholds/$target.$name.p90.json") mallocs per iteration"
  done <<< "$names"
  exit 0
fi
# A benchmark without a stored count would be skipped silently by the check: each must have one.
missing=0
while IFS= read -r name; do
  if [ ! -f "Thresholds/$target.$name.p90.json" ]; then
    echo "!! no stored malloc count for '$name' (scripts/bench-thresholds.sh --update stores them)" >&2
    missing=1
  fi
done <<< "$names"
[ "$missing" -eq 0 ] || exit 1
set +e
swift package benchmark thresholds check --target "$target" --filter "$filter" --metric mallocCountTotal \
  --path Thresholds --no-progress > "$log" 2>&1
status=$?
set -e
grep -vE "^\[[0-9]+/[0-9]+\]|^(Compiling|Building|Write|Linking|Emitting|Wrapping|Fetch|Creating|Working) |Warning: running with the Swift runtime interposer|skipping LD_PRELOAD|^\s*$" "$log" || true
if [ "$status" -ne 0 ]; then
  echo "!! thresholds check failed (exit $status): a benchmark crashed, or malloc counts differ from" >&2
  echo "   Benchmarks/Thresholds (above). A rise on the forwarding path is a regression (Benchmarks/README.md: find" >&2
  echo "   it with --allocation-stacks); a legitimate change is stored with scripts/bench-thresholds.sh --update" >&2
  echo "   and committed with the reason." >&2
  exit 1
fi
grep -q "EQUAL to the defined thresholds" "$log" || { echo "!! the check passed without saying the counts were equal" >&2; exit 1; }
echo "ok: $(echo "$names" | wc -l) benchmarks at their stored malloc counts"
