#!/usr/bin/env python3
"""Recording with real browsers: two headless Chromium on the demo page (`sfu demo`), the moderator's "Start
recording" and "Stop recording" buttons, then every file the node wrote checked with FFmpeg.

Run inside a private network namespace with `sfu demo` serving on 127.0.0.1:8000 and recording into DIR:
    python3 recording_test.py --speech speech.wav --silence silence.wav --recordings DIR --sfu path/to/sfu
Carol (moderator, silent) and Alice (the speech file) publish microphone and fake camera. Checked: both see
the recording on and off (the seeds' roomRecordOn / roomRecordOff), the manifest lists each one's audio and
camera, every file has the codec it should and lasts as long as it was recorded (within 0.5 s), decodes fully
without an error, Alice's recorded audio follows the speech she sent (envelope cross-correlation), and
`sfu compose` makes one MP4 of it that decodes and lasts as long.
"""
import argparse, glob, json, math, os, struct, subprocess, sys, tempfile, time
from datetime import datetime

sys.dont_write_bytecode = True  # importing demo_test must leave no __pycache__ in the source tree
from demo_test import Browser, report, wait  # noqa: E402

RECORD_SECONDS = 8


def probe(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-show_entries",
                          "stream=codec_name,nb_read_frames:format=duration", "-of", "json", path],
                         capture_output=True, text=True, check=True).stdout
    j = json.loads(out)
    streams = j.get("streams", [])
    return [s["codec_name"] for s in streams], float(j["format"]["duration"]), streams


def decode_errors(path):
    """What a full decode prints at level error (nothing for a clean file)."""
    r = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "null", "-"], capture_output=True, text=True)
    return r.returncode, r.stderr.strip()


def envelope(path, offset=0.0):
    """20 ms RMS envelope of a file's audio at 8 kHz mono."""
    pcm = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "s16le", "-ac", "1", "-ar", "8000", "-"],
                         capture_output=True, check=True).stdout
    samples = struct.unpack(f"<{len(pcm) // 2}h", pcm[: len(pcm) // 2 * 2])
    return [math.sqrt(sum(s * s for s in samples[i:i + 160]) / 160) for i in range(0, len(samples) - 160, 160)]


def best_correlation(sent, recorded):
    """The best normalised correlation of the recorded envelope against the sent one over every lag."""
    n = len(recorded)
    best, best_lag = 0.0, None
    rm = sum(recorded) / n
    r = [x - rm for x in recorded]
    rr = math.sqrt(sum(x * x for x in r)) or 1
    for lag in range(0, len(sent) - n):
        window = sent[lag:lag + n]
        sm = sum(window) / n
        num = sum((a - sm) * b for a, b in zip(window, r))
        ss = math.sqrt(sum((a - sm) ** 2 for a in window)) or 1
        c = num / (ss * rr)
        if c > best:
            best, best_lag = c, lag
    return best, best_lag


def seconds(iso):
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--speech", required=True)
    ap.add_argument("--silence", required=True)
    ap.add_argument("--recordings", required=True)
    ap.add_argument("--sfu", required=True)
    args = ap.parse_args()
    checks = {}
    profiles = tempfile.mkdtemp()
    carol = Browser("carol", 9321, args.silence, profiles)
    alice = Browser("alice", 9322, args.speech, profiles)
    try:
        joined = [carol.join("recorded", "moderator"), alice.join("recorded", "participant")]
        checks["both join"] = all(joined)
        # Media flows both ways before the recording starts.
        wait(lambda: sum((carol.demo("audioPackets") or {}).values()) > 50, 20)
        checks["the moderator's button starts the recording and both pages show it"] = bool(
            carol.click("record-start")
            and wait(lambda: (carol.demo("recording") or {}).get("state") == "recording", 10)
            and wait(lambda: (alice.demo("recording") or {}).get("state") == "recording", 10))
        time.sleep(RECORD_SECONDS)
        checks["the moderator's button stops it and both pages show it off"] = bool(
            carol.click("record-stop")
            and wait(lambda: carol.demo("recording") is None and carol.demo("roster") is not None, 10)
            and wait(lambda: alice.demo("recording") is None, 10))
        manifests = sorted(glob.glob(os.path.join(args.recordings, "recorded", "*", "manifest.json")))
        checks["one recording with a manifest"] = len(manifests) == 1
        m = json.load(open(manifests[-1]))
        directory = os.path.dirname(manifests[-1])
        recorded = seconds(m["stopped_at"]) - seconds(m["started_at"])
        print(f"recording {m['recording']}: {recorded:.2f} s, stop_reason {m['stop_reason']!r}")
        kinds = sorted((s["name"], s["kind"], s["codec"]) for s in m["streams"])
        print("streams:", kinds)
        checks["the manifest lists each one's audio (opus) and camera (vp8)"] = (
            {(s["name"].lower(), s["kind"]) for s in m["streams"]} >= {("alice", "audio"), ("alice", "camera"), ("carol", "audio"), ("carol", "camera")})
        for s in m["streams"]:
            path = os.path.join(directory, s["file"])
            codecs, duration, _ = probe(path)
            expected = recorded - s["start_offset_ms"] / 1000
            status, errors = decode_errors(path)
            print(f"  {s['file']}: {codecs} {duration:.2f} s (expected {expected:.2f}, offset {s['start_offset_ms']} ms), "
                  f"{s['frames']} frames, decode {'clean' if status == 0 and not errors else errors[:200]}")
            checks[f"{s['file']} is {s['codec']}"] = codecs == [s["codec"]]
            checks[f"{s['file']} lasts as long as it was recorded (within 0.5 s)"] = abs(duration - expected) < 0.5
            checks[f"{s['file']} decodes fully without an error"] = status == 0 and not errors
        alice_audio = next(s for s in m["streams"] if s["name"].lower() == "alice" and s["kind"] == "audio")
        sent = envelope(args.speech)
        got = envelope(os.path.join(directory, alice_audio["file"]))
        corr, lag = best_correlation(sent, got)
        print(f"alice's recorded speech vs sent: correlation {corr:.2f} at {lag * 0.02 if lag is not None else 0:.2f} s into the file")
        checks["alice's recorded audio follows the speech she sent (envelope correlation > 0.8)"] = corr > 0.8
        composed = os.path.join(tempfile.mkdtemp(), "composed.mp4")
        r = subprocess.run([args.sfu, "compose", manifests[-1], "-o", composed], capture_output=True, text=True)
        print(r.stdout.strip(), r.stderr.strip()[-400:])
        if r.returncode == 0:
            codecs, duration, _ = probe(composed)
            status, errors = decode_errors(composed)
            print(f"composed: {codecs} {duration:.2f} s")
            checks["sfu compose makes one file with video and audio"] = sorted(codecs) == ["aac", "h264"]
            checks["the composed file lasts as long as the recording (within 0.5 s)"] = abs(duration - recorded) < 0.5
            checks["the composed file decodes fully"] = status == 0 and not errors
        else:
            checks["sfu compose makes one file with video and audio"] = False
    finally:
        carol.close()
        alice.close()
    report(checks, "recording")


if __name__ == "__main__":
    main()
