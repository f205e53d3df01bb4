#!/usr/bin/env python3
"""A new talker's first words as a real Chromium listener hears them (issue 28), on the demo page (`sfu demo`).

Run inside a private network namespace with `sfu demo` serving on 127.0.0.1:8000:
    python3 onset_test.py --alice alice.wav --bob bob.wav --bob-onset 12.0 --silence silence.wav --json out.json [--expect heard|clipped]
alice talks first and then falls silent; lena listens with one talker slot (`demo.setTalkers(1)`), so alice holds
it; bob's microphone file is silent until `--bob-onset` seconds and then speaks. The node lets bob into lena's slot
only once its detector calls him speaking, 80-300 ms into his first word; with `talkers.onset_replay_ms` the slot
first sends what bob said from his first loud frame, in a burst lena's jitter buffer must absorb.

lena's page records what her slot plays (Web Audio, 48 kHz) and polls getStats every 50 ms. The script finds bob's
first word in the recording (the first loud 10 ms after the slot map gave her bob), cross-correlates 200 ms of it
with bob's file to learn which part of his speech it is (`clipped_ms`: how far into his first word lena's audio
starts), and reads from getStats what the burst did to her jitter buffer: its delay before, at its peak and how
long it took to come back, the audio removed to catch up (NetEQ's accelerate) and any concealment.
"""
import argparse, base64, json, sys, time

import numpy as np

from demo_test import Browser, node_metric, report, wait

CAPTURE = r"""
(() => {
  const pc = subscribePC;
  const track = pc.getTransceivers().find((t) => t.direction !== "stopped" && t.receiver.track.kind === "audio").receiver.track;
  const ctx = new AudioContext({ sampleRate: 48000 });
  const source = ctx.createMediaStreamSource(new MediaStream([track]));
  const node = ctx.createScriptProcessor(2048, 1, 1);
  const sink = ctx.createGain();
  sink.gain.value = 0;
  window.onset = { chunks: [], times: [], stats: [], slots: [], rate: ctx.sampleRate };
  node.onaudioprocess = (e) => {
    const x = e.inputBuffer.getChannelData(0);
    const pcm = new Int16Array(x.length);
    for (let i = 0; i < x.length; i++) pcm[i] = Math.max(-32768, Math.min(32767, Math.round(x[i] * 32767)));
    onset.chunks.push(pcm);
    onset.times.push(performance.now());
  };
  source.connect(node);
  node.connect(sink);
  sink.connect(ctx.destination);
  const mid = pc.getTransceivers().find((t) => t.receiver.track === track).mid;
  setInterval(async () => {
    const now = performance.now();
    (await pc.getStats(track)).forEach((s) => {
      if (s.type !== "inbound-rtp") return;
      onset.stats.push({ t: now, delay: s.jitterBufferDelay, emitted: s.jitterBufferEmittedCount, target: s.jitterBufferTargetDelay,
        removed: s.removedSamplesForAcceleration, inserted: s.insertedSamplesForDeceleration, concealed: s.concealedSamples,
        silentConcealed: s.silentConcealedSamples, concealments: s.concealmentEvents, received: s.totalSamplesReceived,
        packets: s.packetsReceived });
    });
    const who = demo.slots[mid] || null;
    if (!onset.slots.length || onset.slots[onset.slots.length - 1].who !== who) onset.slots.push({ t: now, who });
  }, 50);
  return mid;
})()
"""

DUMP = r"""
(() => {
  const n = onset.chunks.reduce((a, c) => a + c.length, 0);
  const all = new Int16Array(n);
  let at = 0;
  for (const c of onset.chunks) { all.set(c, at); at += c.length; }
  let s = "";
  const bytes = new Uint8Array(all.buffer);
  for (let i = 0; i < bytes.length; i += 8192) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 8192));
  return JSON.stringify({ pcm: btoa(s), sizes: onset.chunks.map((c) => c.length), times: onset.times, stats: onset.stats, slots: onset.slots });
})()
"""


def read_wav(path):
    """16-bit mono 48 kHz PCM of a WAV file (sox writes WAVE_FORMAT_EXTENSIBLE, which `wave` refuses)."""
    data = open(path, "rb").read()
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE", path
    i, fmt = 12, None
    while i + 8 <= len(data):
        kind, size = data[i:i + 4], int.from_bytes(data[i + 4:i + 8], "little")
        body = data[i + 8:i + 8 + size]
        if kind == b"fmt ":
            fmt = (int.from_bytes(body[2:4], "little"), int.from_bytes(body[4:8], "little"), int.from_bytes(body[14:16], "little"))
        elif kind == b"data":
            assert fmt[0] in (1, 0xFFFE) and fmt[1:] == (48000, 16), f"{path}: {fmt}"
            return np.frombuffer(body[:len(body) // 2 * 2], dtype="<i2").astype(np.float64)
        i += 8 + size + (size & 1)
    raise ValueError(f"{path}: no data chunk")


def rms_db(x):
    return 10 * np.log10(np.mean(x * x) / 32768.0**2 + 1e-12)


def first_loud(x, start, threshold_db=-45.0, frame=480):
    """Index of the first 10 ms frame at or after `start` louder than `threshold_db` dBFS, or None."""
    for i in range(max(0, start), len(x) - frame, frame):
        if rms_db(x[i:i + frame]) > threshold_db:
            return i
    return None


def best_offset(template, signal):
    """Where in `signal` `template` fits best (sample offset) and the normalised correlation there."""
    n = len(template)
    corr = np.correlate(signal, template, mode="valid")
    energy = np.sqrt(np.convolve(signal * signal, np.ones(n), mode="valid")) * np.sqrt(np.sum(template * template)) + 1e-9
    ncc = corr / energy
    k = int(np.argmax(ncc))
    return k, float(ncc[k])


def analyse(dump, bob, bob_onset_s, rate=48000):
    pcm = np.frombuffer(base64.b64decode(dump["pcm"]), dtype=np.int16).astype(np.float64)
    # Wall time of each recorded sample: each chunk was handed over at `times[i]`, its last sample then.
    ends = np.cumsum(dump["sizes"])
    times = np.array(dump["times"])

    def sample_at(t_ms):
        i = int(np.searchsorted(times, t_ms))
        return int(ends[min(i, len(ends) - 1)] - (times[min(i, len(times) - 1)] - t_ms) * rate / 1000)

    def time_at(sample):
        i = int(np.searchsorted(ends, sample))
        i = min(i, len(ends) - 1)
        return times[i] - (ends[i] - sample) * 1000 / rate

    took = next((s["t"] for s in dump["slots"] if (s["who"] or "").startswith("bob")), None)
    if took is None:
        return {"error": "the slot map never gave lena bob"}
    # Bob's first word in what lena played: the first loud 10 ms from shortly before the slot map named him (his
    # audio may start a little before the event reaches the page).
    heard_at = first_loud(pcm, sample_at(took - 300))
    if heard_at is None:
        return {"error": "nothing loud in lena's recording after bob took her slot"}
    # Bob's file: his first word starts at the first loud 10 ms after his silence.
    said_at = first_loud(bob, int(bob_onset_s * rate) - rate // 10)
    template = pcm[heard_at:heard_at + rate // 5]  # 200 ms of what lena heard first of bob
    window = bob[said_at - rate // 20:said_at + rate]  # his first second, from 50 ms before his first word
    k, ncc = best_offset(template, window)
    clipped_ms = (k - rate // 20) * 1000 / rate
    # The first 100 ms of bob's speech against what lena played at the matching place (her onset moved by the
    # offset found above): correlation, and energy relative to the 400 ms after it in each (Chromium's gain
    # control makes what lena hears louder than the file, so only the shape of the onset compares).
    start = heard_at - (k - rate // 20)
    sent100 = bob[said_at:said_at + rate // 10]
    got100 = pcm[max(0, start):max(0, start) + rate // 10]
    _, ncc100 = best_offset(sent100, pcm[max(0, start - rate // 50):start + rate // 10 + rate // 50])
    sent_next = bob[said_at + rate // 10:said_at + rate // 2]
    got_next = pcm[max(0, start) + rate // 10:max(0, start) + rate // 2]
    energy = lambda x: float(np.mean(x * x)) + 1e-9
    energy_ratio = float(np.sqrt((energy(got100) / energy(got_next)) / (energy(sent100) / energy(sent_next))))
    # The jitter buffer around the take-over: delay of what it emitted over each 100 ms (from the cumulative
    # jitterBufferDelay / jitterBufferEmittedCount), from 2 s before to 8 s after.
    stats = dump["stats"]
    t0 = time_at(heard_at)
    series = []
    for a, b in zip(stats, stats[2:]):
        de = b["emitted"] - a["emitted"]
        if de > 0:
            series.append(((b["t"] - t0) / 1000, (b["delay"] - a["delay"]) / de * 1000))
    before = [d for t, d in series if -2.0 <= t < -0.2]
    after = [(t, d) for t, d in series if 0 <= t <= 8]
    baseline = float(np.median(before)) if before else None
    peak = max((d for _, d in after), default=None)
    recovered = None
    if baseline is not None and after:
        # The first time from which the delay stays within 20 ms of what it was before.
        for i, (t, _) in enumerate(after):
            if all(d <= baseline + 20 for _, d in after[i:]):
                recovered = t
                break

    def delta(key, lo, hi):
        inside = [s for s in stats if lo <= (s["t"] - t0) / 1000 <= hi and s.get(key) is not None]
        return (inside[-1][key] - inside[0][key]) if len(inside) >= 2 else None

    removed = delta("removed", -0.5, 8)
    concealed = delta("concealed", -0.5, 8)
    silent = delta("silentConcealed", -0.5, 8)
    return {
        "clipped_ms": clipped_ms, "match": ncc, "first_100ms_correlation": ncc100, "first_100ms_energy_ratio": energy_ratio,
        "heard_after_slot_event_ms": time_at(heard_at) - took,
        "jitter_buffer_ms_before": baseline, "jitter_buffer_ms_peak": peak, "back_within_20ms_after_s": recovered,
        "removed_for_acceleration_ms": removed / rate * 1000 if removed is not None else None,
        "concealed_ms": concealed / rate * 1000 if concealed is not None else None,
        "audible_concealed_ms": (concealed - silent) / rate * 1000 if concealed is not None and silent is not None else None,
        "delay_series": [(round(t, 2), round(d, 1)) for t, d in series if -1 <= t <= 8],
    }


def holds(browser, who):
    """Whether the browser's slot map names participant `who` (ids are the name and a number: bob-3)."""
    return any((p or "").startswith(who + "-") for p in (browser.demo("slots") or {}).values())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--alice", required=True)
    ap.add_argument("--bob", required=True)
    ap.add_argument("--bob-onset", type=float, required=True, help="seconds of silence before bob's first word in his file")
    ap.add_argument("--silence", required=True)
    ap.add_argument("--json")
    ap.add_argument("--expect", choices=["heard", "clipped"])
    ap.add_argument("--port", type=int, default=9400)
    a = ap.parse_args()
    bob_pcm = read_wav(a.bob)
    profiles = "/tmp/onset-profiles"
    alice = Browser("alice", a.port, a.alice, profiles)
    lena = Browser("lena", a.port + 1, a.silence, profiles)
    started = time.monotonic()
    browsers = [alice, lena]
    checks = {}
    try:
        checks["alice joined"] = bool(alice.join("onset", "participant"))
        checks["lena joined"] = bool(lena.join("onset", "participant"))
        checks["lena takes one talker"] = (lena.eval("demo.setTalkers(1).then((r) => r.result)") == 0)
        checks["alice holds lena's slot"] = bool(wait(lambda: holds(lena, "alice"), 15))
        mid = lena.eval(CAPTURE)
        checks["lena records her slot"] = mid is not None
        bob = Browser("bob", a.port + 2, a.bob, profiles)
        browsers.append(bob)
        bob_started = time.monotonic()
        checks["bob joined"] = bool(bob.join("onset", "participant"))
        # Bob's first word, and six seconds of him after it.
        time.sleep(max(0, a.bob_onset + 7 - (time.monotonic() - bob_started)))
        checks["bob took lena's slot"] = bool(wait(lambda: holds(lena, "bob"), 5))
        dump = json.loads(lena.eval(DUMP))
        result = analyse(dump, bob_pcm, a.bob_onset)
        result["seconds"] = time.monotonic() - started
        print(json.dumps({k: v for k, v in result.items() if k != "delay_series"}, indent=1))
        print("jitter buffer delay (s from bob's first audio, ms):", result.get("delay_series"))
        if a.json:
            json.dump(result, open(a.json, "w"), indent=1)
        replays = node_metric("sfu_onset_replays_total", result="sent")
        print(f"node: {replays:.0f} onset replays, {node_metric('sfu_onset_replayed_packets_total'):.0f} packets replayed")
        if a.expect == "heard":
            checks["the node counts its onset replays"] = replays >= 1
        if a.expect == "clipped":
            checks["the node replays nothing with onset_replay_ms = 0"] = replays == 0
        # Judged: what does not depend on how Chromium's jitter buffer and gain control behaved this time. With
        # the replay lena hears bob from his first word; the cut without it (74-102 ms in most runs) and the
        # jitter buffer's recovery (2.3-5.2 s, once not within 8 s) are reported, not judged: a cut word starts
        # mid-sound and once matched his file too poorly (0.26) to place it, and the virtual-time tests
        # (OnsetReplayScenarioTests) pin both behaviours exactly.
        if a.expect == "heard" and "error" not in result:
            checks["lena hears bob from his first word (clipped <= 30 ms, match >= 0.45)"] = (
                result["clipped_ms"] <= 30 and result["match"] >= 0.45)
    finally:
        for b in browsers:
            b.close()
    report(checks, "onset in Chromium")


if __name__ == "__main__":
    main()
