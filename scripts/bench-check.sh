#!/usr/bin/env bash
# Checks the load generator end to end, not the figures: a small `sfu bench --against janus` (2 publishers
# with audio + VP8, 4 subscribers, 4 s) must connect every participant through this node and through Janus
# VideoRoom, deliver media through both, and write the report and the comparison. Needs root (the bench makes
# a network namespace for Janus). About 40 s. Then scripts/tune-check.sh: `sfu tune` and `sfu bench` must
# report the same listener metrics for one short meeting (about 50 s more).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
echo "== bench check: the same small plan through the node and through Janus VideoRoom"
build_sfu debug
json=$(mktemp)
trap 'rm -f "$json"' EXIT
timeout 300 "$sfu" bench --against janus --baseline-seconds 0 --json "$json" \
  --set video=true --set publishers=2 --set speakers=2 --set max_active_talkers=2 --set subscribers=4 \
  --set seconds=4 --set ramp_seconds=2 | grep -vE "^ +[0-9.]+ s "
python3 - "$json" <<'PY'
import json, sys
reports = json.load(open(sys.argv[1]))
assert [r["label"] for r in reports] == ["sfu", "janus"], reports
ok = True
for r in reports:
    checks = {
        "every participant connected": r["connected"] == r["participants"] == 6,
        "subscribers received media": r["receivedPackets"] > 0,
        "latency was sampled": r["latencyMilliseconds"]["samples"] > 0,
        "loss under 1 %": r["loss_fraction"] < 0.01,
        "server CPU measured": r["nodeCPUSeconds"] > 0,
    }
    for name, passed in checks.items():
        print(f"{'ok  ' if passed else 'FAIL'} {r['label']}: {name}")
        ok = ok and passed
sys.exit(0 if ok else 1)
PY
sfu="$sfu" scripts/tune-check.sh
