#!/usr/bin/env python3
"""Live streaming over RTMP with real browsers: three headless Chromium on the demo page (`sfu demo`), a local
RTMP server (Debian's nginx with libnginx-mod-rtmp) in the same private namespace, and the stream pulled back
with FFmpeg.

Run inside a private network namespace with `sfu demo` serving on 127.0.0.1:8000:
    python3 streaming_test.py --speech alice.wav --late late.wav --silence silence.wav --work DIR
Alice's fake camera is red and she talks first; Bob's is blue and he talks after 14 s of silence; Carol (the
moderator, grey) is silent. Checked: an invalid URL is refused (5125), so is a loopback URL the node's
`streaming.rtmp_hosts` does not list (the demo lists nginx-rtmp's 127.0.0.1:1935), and a participant may not
start (5003); the stream is up within 15 s of the start; the picture follows the active talker (red while Alice
talks, blue once Bob does); the encoder killed mid-stream comes back (a `streaming` event gives the reason) and
the stream with it; stop ends it (its answer's time is printed), a second start works again, and every start
(starting, then on once the stream is at the server) and stop reaches the page's event stream.
"""
import argparse, json, os, signal, subprocess, sys, tempfile, time, urllib.request, wave

sys.dont_write_bytecode = True  # importing demo_test must leave no __pycache__ in the source tree
from demo_test import Browser, report, wait, NODE  # noqa: E402

RTMP = "rtmp://127.0.0.1:1935/live/standup"


def api(method, path, body=None):
    req = urllib.request.Request(NODE + path, method=method, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def camera(path, color):
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"color=c={color}:s=320x240:r=15", "-t", "2",
                    "-pix_fmt", "yuv420p", path], check=True)


def stream_up():
    try:
        r = subprocess.run(["ffprobe", "-v", "error", "-rw_timeout", "3000000", "-analyzeduration", "1000000", "-show_entries",
                            "stream=codec_name", "-of", "json", RTMP], capture_output=True, text=True, timeout=15)
    except subprocess.TimeoutExpired:
        return False
    return r.returncode == 0 and sorted(s["codec_name"] for s in json.loads(r.stdout).get("streams", [])) == ["aac", "h264"]


def first_seconds(source, seconds, silence_after, path):
    """Writes the first `seconds` of WAV `source` to `path`, then `silence_after` seconds of silence."""
    with wave.open(source) as w:
        params = w.getparams()
        frames = w.readframes(int(seconds * w.getframerate()))
    with wave.open(path, "wb") as out:
        out.setparams(params)
        out.writeframes(frames + b"\0" * (int(silence_after * params.framerate) * params.sampwidth * params.nchannels))


def delayed(source, delay, path):
    """Writes `delay` seconds of silence and then audio file `source` to `path` (sox's pad)."""
    subprocess.run(["sox", source, path, "pad", str(delay), "0"], check=True)


def tail(path, lines=15):
    try:
        return open(path, errors="replace").read().splitlines()[-lines:]
    except OSError as e:
        return [f"({path}: {e})"]


def encoder_log(pids):
    """The last lines FFmpeg wrote (the node keeps them beside the encoder's SDP, `LiveEncoder`)."""
    out = []
    for pid in pids:
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError as e:
            out.append(f"(encoder {pid}: {e})")
            continue
        sdp = next((a.decode() for a in args if a.endswith(b".sdp")), None)
        out += tail(sdp + ".log") if sdp else [f"(encoder {pid}: no SDP in its arguments)"]
    return out


def encoder_pids():
    """The node's FFmpeg encoders (their SDP files are named sfu-live-...)."""
    out = subprocess.run(["pgrep", "-f", "^/usr/bin/ffmpeg .*sfu-live-"], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


def mean_colors(seconds):
    """Pulls the stream for `seconds` and returns the mean (r, g, b) of one 8x8 frame per second."""
    r = subprocess.run(["ffmpeg", "-v", "error", "-rw_timeout", "5000000", "-i", RTMP, "-t", str(seconds), "-vf", "fps=1,scale=8:8",
                        "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], capture_output=True, timeout=seconds + 30)
    data = r.stdout
    frames = [data[i:i + 192] for i in range(0, len(data) - 191, 192)]
    return [tuple(sum(f[c::3]) / 64 for c in range(3)) for f in frames]


def tint(rgb):
    r, g, b = rgb
    if r > 120 and r > b + 60 and r > g + 60:
        return "red"
    if b > 120 and b > r + 60 and b > g + 60:
        return "blue"
    return "other"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--speech", required=True)
    ap.add_argument("--late", required=True)
    ap.add_argument("--silence", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    checks = {}
    work = args.work
    conf = os.path.join(work, "nginx-rtmp.conf")
    open(conf, "w").write(f"""load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
daemon off; master_process off; pid {work}/nginx.pid; error_log {work}/nginx-error.log;
events {{ worker_connections 64; }}
rtmp {{ server {{ listen 127.0.0.1:1935; application live {{ live on; record off; }} }} }}
""")
    nginx = subprocess.Popen(["nginx", "-c", conf, "-p", work], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    profiles = tempfile.mkdtemp()
    # Alice talks for the first 30 s, Bob from 34 s on: the stream is up and shows Alice before Bob speaks.
    alice_wav = os.path.join(work, "alice-first.wav")
    first_seconds(args.speech, 30, 60, alice_wav)
    bob_wav = os.path.join(work, "bob-late.wav")
    delayed(args.late, 20, bob_wav)
    for name, color in (("red", "red"), ("blue", "blue"), ("grey", "gray")):
        camera(os.path.join(work, f"{name}.y4m"), color)
    fake = lambda n: (f"--use-file-for-fake-video-capture={os.path.join(work, n + '.y4m')}",)
    carol = Browser("carol", 9331, args.silence, profiles, fake("grey"))
    alice = Browser("alice", 9332, alice_wav, profiles, fake("red"))
    bob = Browser("bob", 9333, bob_wav, profiles, fake("blue"))
    try:
        joined = [carol.join("live", "moderator"), alice.join("live", "participant"), bob.join("live", "participant")]
        checks["three join"] = all(joined)
        t0 = time.monotonic()
        me, her = carol.demo("participant"), alice.demo("participant")
        status, bad = api("POST", "/v1/rooms/live/streaming/start", {"by": me, "rtmp_url": "http://example.com/x"})
        checks["an invalid RTMP URL is refused with 5125"] = status == 400 and bad.get("result") == 5125
        for url in ("rtmp://127.0.0.1:1936/live/x", "rtmp://localhost/live/x", "rtmp://10.0.0.1/live/x"):
            status, bad = api("POST", "/v1/rooms/live/streaming/start", {"by": me, "rtmp_url": url})
            checks[f"{url} (not listed) is refused with 5125"] = status == 400 and bad.get("result") == 5125
        status, refused = api("POST", "/v1/rooms/live/streaming/start", {"by": her, "rtmp_url": RTMP})
        checks["a participant may not start streaming (5003)"] = status == 403 and refused.get("result") == 5003
        start = time.monotonic()
        status, started = api("POST", "/v1/rooms/live/streaming/start", {"by": me, "rtmp_url": RTMP})
        checks["the moderator starts the live stream"] = status == 200 and started.get("stream", "").startswith("live-")
        status, again = api("POST", "/v1/rooms/live/streaming/start", {"by": me, "rtmp_url": RTMP})
        checks["a second start while streaming is refused with 5122"] = status == 409 and again.get("result") == 5122
        up = wait(stream_up, 20)
        print(f"stream up {time.monotonic() - start:.1f} s after the start")
        checks["the stream is up within 15 s (H.264 and AAC at the RTMP server)"] = bool(up) and time.monotonic() - start < 15
        # Pull across the switch: until Bob has talked a few seconds.
        colors = mean_colors(max(5, int(40 - (time.monotonic() - t0))))
        tints = [tint(c) for c in colors]
        print("picture by second:", " ".join(tints))
        first_red = tints.index("red") if "red" in tints else None
        checks["the picture shows the active talker: Alice (red), then Bob (blue)"] = (
            first_red is not None and "blue" in tints[first_red:])
        # The encoder dies: the node restarts it and says why; the stream comes back.
        pid = encoder_pids()
        checks["the encoder runs as its own process"] = len(pid) == 1
        if len(pid) == 1:
            os.kill(pid[0], signal.SIGKILL)
            time.sleep(3)
            back = wait(stream_up, 25)
            checks["the stream comes back after the encoder is killed"] = bool(back)
            new = encoder_pids()
            checks["a new encoder process runs"] = len(new) == 1 and new != pid
            if not back:
                print("the stream did not come back; the restarted encoder's log, the RTMP server's and the node's live stream lines:")
                node = [l for l in tail(os.path.join(work, "demo.log"), 400) if "live stream" in l]
                for line in encoder_log(new) + tail(os.path.join(work, "nginx-error.log")) + node[-10:]:
                    print("   ", line)
        state = api("GET", "/v1/rooms/live")[1].get("streaming") or {}
        checks["the room's state says streaming"] = state.get("state") == "streaming"
        asked = time.monotonic()
        status, stopped = api("POST", "/v1/rooms/live/streaming/stop", {"by": me})
        print(f"streaming/stop answered in {time.monotonic() - asked:.2f} s")
        checks["the moderator stops it"] = status == 200 and stopped.get("stream") == started.get("stream")
        time.sleep(2)
        checks["after the stop the stream is gone"] = not stream_up()
        status, none = api("POST", "/v1/rooms/live/streaming/stop", {"by": me})
        checks["a stop without a stream is refused with 5124"] = status == 409 and none.get("result") == 5124
        status, restarted = api("POST", "/v1/rooms/live/streaming/start", {"by": me, "rtmp_url": RTMP})
        checks["it starts again"] = status == 200 and bool(wait(stream_up, 20))
        asked = time.monotonic()
        api("POST", "/v1/rooms/live/streaming/stop", {"by": me})
        print(f"streaming/stop answered in {time.monotonic() - asked:.2f} s")
        wait(lambda: len(carol.demo("streamingEvents") or []) >= 8, 10)
        events = carol.demo("streamingEvents") or []
        print("streaming events at the page:", [(e.get("state"), e.get("reason")) for e in events])
        # Each start: starting, then on once the stream is at the server; each restart: starting (with why), then
        # on again; each stop: off.
        told = [e.get("state") for e in events if not e.get("reason")]
        told = [st for i, st in enumerate(told) if i == 0 or st != told[i - 1]]
        checks["the page hears each start (starting, then on) and stop, and the restart with its reason"] = (
            told == ["starting", "on", "off", "starting", "on", "off"]
            and any(e.get("state") == "starting" and (e.get("reason") or "").startswith("encoder restarted") for e in events))
    finally:
        for b in (carol, alice, bob):
            b.close()
        nginx.terminate()
    report(checks, "live streaming")


if __name__ == "__main__":
    main()
