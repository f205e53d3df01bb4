#!/usr/bin/env bash
# Regenerates the load-generator results of Benchmarks/README.md on this machine: a raw UDP baseline, a video
# conference, a 1,000-publisher audio room without the level extension, a room of 100 video publishers, and
# the max_active_talkers sweep with its chart, and the video conference through this node and through Janus
# VideoRoom (needs root). Each server runs pinned to core 1, the generator to core 0. Writes
# Benchmarks/results/*.json and docs/bench-sweep.svg and prints the Markdown tables. About 8 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
scripts/install-deps.sh --bench
build_sfu release
out=Benchmarks/results
mkdir -p "$out" docs
run() { name=$1; shift; echo "== $name"; taskset -c 0 "$sfu" bench --cores 1 --json "$out/$name.json" "$@" | tail -14; }
run video-conference --set video=true --set rooms=2 --set publishers=4 --set subscribers=60 --set seconds=15 --set ramp_seconds=5
run audio-1000-decode --set publishers=1000 --set speakers=3 --set subscribers=2 --set level_extension=false --set seconds=15 --set ramp_seconds=10
run video-100 --set video=true --set publishers=100 --set speakers=4 --set subscribers=20 --set video_kbps=300 --set width=320 --set height=180 --set seconds=15 --set ramp_seconds=10
run sweep-max-active-talkers --set video=true --set publishers=12 --set speakers=12 --set turn_seconds=1 --set subscribers=20 \
  --set seconds=10 --set ramp_seconds=4 --sweep max_active_talkers=1,2,4,6,9,12 --chart docs/bench-sweep.svg
run against-janus --against janus --set video=true --set rooms=2 --set publishers=4 --set max_active_talkers=4 --set subscribers=60 \
  --set seconds=15 --set ramp_seconds=5
python3 - "$out" <<'PY'
import json, sys, os
out = sys.argv[1]
def row(label, r):
    f = lambda v, fmt: (fmt % v) if isinstance(v, (int, float)) else "-"
    lat = r["latencyMilliseconds"]
    return f"| {label} | {r['connected']}/{r['participants']} | {f(r['packets_in_per_second'], '%.0f')} | {f(r['packets_out_per_second'], '%.0f')} | {f(r['node_cores'], '%.2f')} | {f(r['cpu_seconds_per_million_packets'], '%.2f')} | {f(r['packets_out_per_core_second'], '%.0f')} | {f(r['share_of_baseline'] and r['share_of_baseline'] * 100, '%.0f %%')} | {f(lat.get('p50'), '%.1f')} / {f(lat.get('p99'), '%.1f')} | {f(r['loss_fraction'] * 100, '%.3f %%')} | {f(r['memory_per_participant_bytes'] and r['memory_per_participant_bytes'] / 1024, '%.0f')} | {'yes' if r['generator_was_bottleneck'] else 'no'} |"
print("| run | connected | pkts in/s | pkts out/s | node cores | CPU s per M pkts | pkts out per core-s | of raw UDP | latency p50 / p99 ms | loss | KiB per participant | generator-bound |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for name in ["video-conference", "audio-1000-decode", "video-100"]:
    print(row(name, json.load(open(os.path.join(out, name + ".json")))))
for r in json.load(open(os.path.join(out, "sweep-max-active-talkers.json"))):
    print(row(r["label"], r))
print()
print("| server | delivered pkts/s | server cores | delivered per CPU-second | loss | latency p50 / p99 ms | memory MiB |")
print("|---|---|---|---|---|---|---|")
pair = json.load(open(os.path.join(out, "against-janus.json")))
for r in pair:
    lat = r["latencyMilliseconds"]
    print(f"| {r['label']} | {r['receivedPackets'] / r['measuredSeconds']:.0f} | {r['node_cores']:.2f} | {r['delivered_per_core_second']:.0f} | {r['loss_fraction'] * 100:.3f} % | {lat['p50']:.1f} / {lat['p99']:.1f} | {r['nodeMemoryBytes'] / 1048576:.0f} |")
print(f"\nratio: {pair[0]['delivered_per_core_second'] / pair[1]['delivered_per_core_second']:.1f}x")
PY
