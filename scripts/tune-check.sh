#!/usr/bin/env bash
# Checks that `sfu tune` (the room on virtual time) and `sfu bench` (a real node over loopback UDP) report
# the same listener metrics (since the onset replay, issue 28: 98.86 % and 0 ms on virtual time, 98.95-99.04 % and
# 0 ms over UDP; the figures below are from before it): both play the short meeting of docs/tune/check.conf (the same seeded script,
# voices and join order) at max_active_talkers = 2, and the bench's subscribers must hear the same share of
# the speech within 3 points and the same clipped onset (median) within 80 ms. The real node is behind by
# 0.3-2.2 points and 0-40 ms in 20 runs on a loaded 2-core machine (load 2-5, some beside two busy loops),
# more under more load; the cause is not found yet (not the phase of its 40 ms checks, which favours it, nor
# silence filled for late packets, which a helper measured happens once a run). The tolerance still fails
# what it is for: the detector before issue 15 was 4.4 points and 120 ms apart, and another meeting
# (`--set seed=6`) 3.7-5.5 points away. Extra arguments go to `sfu tune` only: `scripts/tune-check.sh --set seed=6` compares two
# different meetings and must fail. About 45 s (a 30 s meeting twice, and the builds' start-up).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
[ -n "${sfu:-}" ] || build_sfu debug
echo "== tune check: one meeting through the room on virtual time and through a node over UDP"
scenario=docs/tune/check.conf
tune_json=$(mktemp)
bench_json=$(mktemp)
trap 'rm -f "$tune_json" "$bench_json"' EXIT
timeout 300 "$sfu" tune --scenario "$scenario" --ks 2 --json "$tune_json" "$@" | grep -E "^(K|2) \|"
timeout 300 "$sfu" bench --scenario "$scenario" --baseline-seconds 0 --json "$bench_json" \
  --set max_active_talkers=2 --set subscribers=3 --set ramp_seconds=1 | grep -E "^(meeting|connected|loss) "
python3 - "$tune_json" "$bench_json" <<'PY'
import json, statistics, sys
tune = json.load(open(sys.argv[1]))["results"][0]
bench = json.load(open(sys.argv[2]))
listeners = bench.get("listeners") or []
def median(key):
    values = [l[key] for l in listeners if l.get(key) is not None]
    return statistics.median(values) if values else None
coverage = median("coverage")
onset = median("clippedOnsetMedianMs")
print(f"virtual time: coverage {tune['coverage'] * 100:.2f} %, clipped onset p50 {tune['clipped_onset_p50_ms']} ms, missed turns {tune['missed_turns']} of {tune['turns']}")
if coverage is not None:
    print(f"real node:    coverage {coverage * 100:.2f} %, clipped onset p50 {onset} ms, missed turns {median('missedTurns')} of {listeners[0]['turns']}")
checks = {
    "every participant connected": bench["connected"] == bench["participants"],
    "three listeners reported": len(listeners) == 3,
    "coverage within 3 points": coverage is not None and abs(coverage - tune["coverage"]) <= 0.03,
    "clipped onset p50 within 80 ms": onset is not None and tune["clipped_onset_p50_ms"] is not None
        and abs(onset - tune["clipped_onset_p50_ms"]) <= 80,
}
ok = True
for name, passed in checks.items():
    print(f"{'ok  ' if passed else 'FAIL'} {name}")
    ok = ok and passed
sys.exit(0 if ok else 1)
PY
