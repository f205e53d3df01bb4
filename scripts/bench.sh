#!/usr/bin/env bash
# Regenerates the load-generator results of Benchmarks/README.md on this machine: a raw UDP baseline, a video
# conference, a 1,000-publisher audio room without the level extension, a room of 100 video publishers, and
# the max_active_talkers sweep with its chart, the video conference through this node and through Janus
# VideoRoom (needs root), small rooms (1 publisher, 1-40 subscribers) through this node, on either libsrtp2, and
# through Janus, and the video conference (two rooms, then one) with subscribers sending REMB and
# transport-cc feedback in alternate runs (the cost of transport-cc, GCC and probing). Each server runs pinned
# to core 1, the generator to core 0.
# These runs keep REMB (transport_cc=false) as they were first measured, except the transport-cc sweep.
# Writes Benchmarks/results/*.json and docs/bench-sweep.svg and prints the Markdown tables. About 20 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
scripts/install-deps.sh --bench
build_sfu release
out=Benchmarks/results
mkdir -p "$out" docs
run() { name=$1; shift; echo "== $name"; taskset -c 0 "$sfu" bench --cores 1 --json "$out/$name.json" "$@" | tail -24; }
run video-conference --set transport_cc=false --set video=true --set rooms=2 --set publishers=4 --set subscribers=60 --set seconds=15 --set ramp_seconds=5
run audio-1000-decode --set transport_cc=false --set publishers=1000 --set speakers=3 --set subscribers=2 --set level_extension=false --set seconds=15 --set ramp_seconds=10
run video-100 --set transport_cc=false --set video=true --set publishers=100 --set speakers=4 --set subscribers=20 --set video_kbps=300 --set width=320 --set height=180 --set seconds=15 --set ramp_seconds=10
run sweep-max-active-talkers --set transport_cc=false --set video=true --set publishers=12 --set speakers=12 --set turn_seconds=1 --set subscribers=20 \
  --set seconds=10 --set ramp_seconds=4 --sweep max_active_talkers=1,2,4,6,9,12 --chart docs/bench-sweep.svg
run against-janus --against janus --set transport_cc=false --set video=true --set rooms=2 --set publishers=4 --set max_active_talkers=4 --set subscribers=60 \
  --set seconds=15 --set ramp_seconds=5
# Small rooms against Janus (issue 12): 1 publisher (VP8 + Opus), N subscribers, N = 1..40; then the same with
# the node built on Debian's NSS-based libsrtp2, as Janus is (built apart in .build-debian; .build stays as it is).
small="--against janus --set video=true --set publishers=1 --set speakers=1 --set max_active_talkers=1 --set seconds=15 --set ramp_seconds=3 --sweep subscribers=1,5,10,20,40"
run small-rooms-against-janus $small
debian_log=$(mktemp)
if ! (unset PKG_CONFIG_PATH; export SFU_SRTP=debian; source scripts/env.sh
      swift build -c release --scratch-path .build-debian --product sfu > "$debian_log" 2>&1); then
  grep -E "error:" "$debian_log" | head -30 >&2
  echo "!! the node on Debian's libsrtp2 did not build; full log: $debian_log" >&2
  exit 1
fi
rm -f "$debian_log"
SFU_BENCH_NODE=$PWD/.build-debian/release/sfu run small-rooms-against-janus-debian-libsrtp $small
run transport-cc --set video=true --set rooms=2 --set publishers=4 --set subscribers=60 --set seconds=10 --set ramp_seconds=5 \
  --set settle_seconds=8 --sweep transport_cc=false,true,false,true
run transport-cc-1-room --set video=true --set rooms=1 --set publishers=4 --set subscribers=60 --set seconds=10 --set ramp_seconds=5 \
  --set settle_seconds=8 --sweep transport_cc=false,true,false,true
python3 - "$out" <<'PY'
import json, sys, os
out = sys.argv[1]
f = lambda v, fmt: (fmt % v) if isinstance(v, (int, float)) else "-"
def row(label, r):
    lat = r["latencyMilliseconds"]
    return f"| {label} | {r['connected']}/{r['participants']} | {f(r['packets_in_per_second'], '%.0f')} | {f(r['packets_out_per_second'], '%.0f')} | {f(r['node_cores'], '%.2f')} | {f(r['cpu_seconds_per_million_packets'], '%.2f')} | {f(r['packets_out_per_core_second'], '%.0f')} | {f(r['share_of_baseline'] and r['share_of_baseline'] * 100, '%.0f %%')} | {f(lat.get('p50'), '%.1f')} / {f(lat.get('p99'), '%.1f')} | {f(r['loss_fraction'] * 100, '%.3f %%')} | {f(r['memory_per_participant_bytes'] and r['memory_per_participant_bytes'] / 1024, '%.0f')} | {f(r.get('node_wait_ms_per_second'), '%.0f')} | {'yes' if r['generator_was_bottleneck'] else 'no'} |"
print("| run | connected | pkts in/s | pkts out/s | node cores | CPU s per M pkts | pkts out per core-s | of raw UDP | latency p50 / p99 ms | loss | KiB per participant | node waited for a CPU, ms/s | generator-bound |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
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
print("\n| N | node (OpenSSL) delivered per CPU-s | Janus | ratio | node (Debian libsrtp) delivered per CPU-s | Janus | ratio"
      " | node OpenSSL / Debian / Janus cores | latency p50 / p99 ms: node OpenSSL, Debian, Janus |")
print("|---|---|---|---|---|---|---|---|---|")
ssl = json.load(open(os.path.join(out, "small-rooms-against-janus.json")))
nss = json.load(open(os.path.join(out, "small-rooms-against-janus-debian-libsrtp.json")))
lat = lambda r: f"{r['latencyMilliseconds']['p50']:.2f} / {r['latencyMilliseconds']['p99']:.2f}"
for k in range(0, len(ssl), 2):
    a, ja, b, jb = ssl[k], ssl[k + 1], nss[k], nss[k + 1]
    print(f"| {a['plan']['subscribers']} | {a['delivered_per_core_second']:.0f} | {ja['delivered_per_core_second']:.0f}"
          f" | {a['delivered_per_core_second'] / ja['delivered_per_core_second']:.2f} | {b['delivered_per_core_second']:.0f}"
          f" | {jb['delivered_per_core_second']:.0f} | {b['delivered_per_core_second'] / jb['delivered_per_core_second']:.2f}"
          f" | {a['node_cores']:.4f} / {b['node_cores']:.4f} / {ja['node_cores']:.4f}, {jb['node_cores']:.4f}"
          f" | {lat(a)}; {lat(b)}; {lat(ja)}, {lat(jb)} |")
header = ("| subscribers send | pkts out/s | node cores | CPU s per M pkts | pkts out per core-s | pkts out per media-worker core-s"
          " | node datagrams out/s | RTCP in/s | probe kbit/s received | latency p50 / p99 ms | loss"
          " | estimate at the end, min / median / max Mbit/s | number_of_videos at the end | changes per subscriber, mean / max"
          " | node waited for a CPU, ms/s | generator-bound |")
mb = lambda v: f"{v / 1e6:.2f}" if isinstance(v, (int, float)) else "-"
for name in ["transport-cc", "transport-cc-1-room"]:
    print(f"\n{name}:\n")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for r in json.load(open(os.path.join(out, name + ".json"))):
        s, m, lat = r.get("subscriber_summary") or {}, r["measuredSeconds"], r["latencyMilliseconds"]
        videos = ", ".join(f"{k} x {v}" for k, v in sorted((s.get("videosAtEnd") or {}).items(), key=lambda kv: -int(kv[0])))
        who = "transport-cc feedback" if r["plan"]["transportCC"] else f"REMB {r['plan']['rembKbps'] // 1000} Mbit/s"
        print(f"| {who} | {r['packets_out_per_second']:.0f} | {r['node_cores']:.2f} | {r['cpu_seconds_per_million_packets']:.2f}"
              f" | {r['packets_out_per_core_second']:.0f} | {f(r.get('packets_out_per_worker_core_second'), '%.0f')}"
              f" | {r['datagramsOut'] / m:.0f} | {r['rtcpIn'] / m:.0f} | {r['probeBytesReceived'] * 8 / m / 1000:.0f}"
              f" | {lat['p50']:.1f} / {lat['p99']:.1f} | {r['loss_fraction'] * 100:.3f} %"
              f" | {mb(s.get('estimateMin'))} / {mb(s.get('estimateMedian'))} / {mb(s.get('estimateMax'))} | {videos or '-'}"
              f" | {s.get('changesMean', 0):.2f} / {s.get('changesMax', 0)} | {f(r.get('node_wait_ms_per_second'), '%.0f')}"
              f" | {'yes' if r['generator_was_bottleneck'] else 'no'} |")
PY
