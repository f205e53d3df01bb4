#!/usr/bin/env bash
# Sweeps the talker detector's parameters with `sfu tune` on each preset (10 minutes of each meeting, video
# on) and prints one table row per (setting, preset, K): how each setting moves coverage, clipped onset,
# missed turns, intrusions and switches. Benchmarks/README.md ("Choosing the detector's defaults") quotes the
# result (Benchmarks/results/detector-sweep.txt is this script's output); each run's report and JSON go to
# $SWEEP_OUT (a temporary directory by default). Needs a release build of sfu-lab.
# A row is `name|key=value ...`: the defaults, the defaults before issue 15, then the defaults with one thing
# changed (SWEEP_SETTINGS replaces the list, SWEEP_PRESETS and SWEEP_MINUTES the meetings).
set -euo pipefail
cd "$(dirname "$0")/.."
lab=.build/release/sfu-lab
out=${SWEEP_OUT:-$(mktemp -d)}
mkdir -p "$out"
minutes=${SWEEP_MINUTES:-10}
settings=${SWEEP_SETTINGS:-"
defaults|
before_issue_15|speaking_interval_ms=300 speaking_min_samples=8 hold_min_samples=0
speaking_interval_ms=300|speaking_interval_ms=300
speaking_interval_ms=20|speaking_interval_ms=20
speaking_min_samples=2|speaking_min_samples=2
speaking_min_samples=8|speaking_min_samples=8
hold_min_samples=0|hold_min_samples=0
speaking_threshold=30|speaking_threshold=30
speaking_threshold=40|speaking_threshold=40
sustained_speech_ms=300|sustained_speech_ms=300
sustained_speech_ms=1000|sustained_speech_ms=1000
decision_interval_ms=100|decision_interval_ms=100
"}
declare -A ks=([standup]=2,4,6 [discussion]=2,4,6,9 [lecture]=1,2,3 [webinar]=2,4,6)
for preset in ${SWEEP_PRESETS:-standup discussion lecture webinar}; do
  while IFS='|' read -r name sets; do
    [ -n "$name" ] || continue
    args=(--preset "$preset" --set "minutes=$minutes" --ks "${ks[$preset]}" --json "$out/$preset-$name.json")
    for s in $sets; do args+=(--set "$s"); done
    "$lab" tune "${args[@]}" > "$out/$preset-$name.txt"
    echo "$preset $name: $(grep -E '^took' "$out/$preset-$name.txt")" >&2
  done <<< "$settings"
done
python3 - "$out" <<'PY'
import glob, json, os, sys
print("setting | preset | K | coverage % | clipped onset p50 / p90 ms | missed turns | intrusions/min | audio switches/min | video switches/min")
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    r = json.load(open(path))
    name = os.path.basename(path)[len(r["preset"]) + 1:-5]
    for x in r["results"]:
        ms = lambda v: "-" if v is None else f"{v:.0f}"
        print(f"{name} | {r['preset']} | {x['k']} | {x['coverage'] * 100:.2f} | {ms(x['clipped_onset_p50_ms'])} / {ms(x['clipped_onset_p90_ms'])} | "
              f"{x['missed_turns']} of {x['turns']} | {x['intrusions_per_minute']:.2f} | {x['audio_switches_per_minute']:.2f} | {x['video_switches_per_minute']:.2f}")
PY
