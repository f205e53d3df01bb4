#!/usr/bin/env python3
"""H.264 through the node with real Chromium: a publisher that sends H.264 only reaches subscribers that can
decode it, and one that cannot is told so.

Run inside the private network namespace where a node's control API answers on 127.0.0.1:8080 (what
scripts/browser-test.sh does after the demo test, against the demo's node):
    python3 codec_test.py --speech speech.wav --silence silence.wav
Two headless Chromium (Debian's, which encodes H.264 with its built-in OpenH264 and decodes it with FFmpeg).
The talking one publishes `pub`, its fake camera with the video transceiver's codecs restricted to H.264 in
packetization-mode 1 (`setCodecPreferences`, as an app does for hardware encoders). The silent one publishes
`vp8pub` in VP8 only, and subscribes `sub` to one audio and one video slot with Chromium's default codecs (VP8,
VP9, H.264, ...) and `vp8sub` (a moderator) with VP8 only. Checks: the publish answer is H.264 with its
profile-level-id; pub encodes H.264; sub's slot map names pub with codec h264, and sub decodes H.264 frames of
pub's size (getStats: framesDecoded, frameWidth, the codec's mimeType); vp8sub's slot map names pub with
decodable false, and vp8sub is sent no video. Then vp8sub hard-mutes pub and lifts it: sub's one video
slot goes to vp8pub and back, and Chromium decodes VP8 then H.264 again on the same receiver (the node changes
the payload type at each source's key frame). Last, in a room of its own, the silent browser publishes VP9 with
three temporal layers (`scalabilityMode` L1T3) and subscribes to it: Chromium decodes VP9 through the node
(its picture ID rewritten, key frames found by the VP9 descriptor).
"""
import argparse, json, os, sys, tempfile, threading, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from demo_test import Browser, wait  # noqa: E402  (the demo test's DevTools driver)
from static_page import serve_page  # noqa: E402

import websocket

NODE = "http://127.0.0.1:8080"
ORIGIN = "http://127.0.0.1:8010"

PAGE = r"""<!doctype html>
<html><head><meta charset="utf-8"><title>codec test</title></head><body><script>
"use strict";
// One RTCPeerConnection per participant this page plays; offers out and answers in through the test.
const t = window.t = { pcs: {} };
const config = { bundlePolicy: "max-bundle", rtcpMuxPolicy: "require" };
// The codecs named (mime types), H.264 only in packetization-mode 1, with RTX.
const only = (names) => RTCRtpReceiver.getCapabilities("video").codecs.filter((c) =>
  (names.includes(c.mimeType) || c.mimeType === "video/rtx") &&
  (c.mimeType !== "video/H264" || /packetization-mode=1/.test(c.sdpFmtpLine || "")));
t.publish = async (name, codecs, scalabilityMode) => {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: true, video: { width: 640, height: 480 } });
  const pc = t.pcs[name] = new RTCPeerConnection(config);
  for (const track of stream.getTracks()) {
    const init = { direction: "sendonly", streams: [stream] };
    if (track.kind === "video" && scalabilityMode) init.sendEncodings = [{ scalabilityMode }];
    const tr = pc.addTransceiver(track, init);
    if (track.kind === "video") tr.setCodecPreferences(only(codecs));
  }
  await pc.setLocalDescription(await pc.createOffer());
  return pc.localDescription.sdp;
};
t.subscribe = async (name, codecs) => {
  const pc = t.pcs[name] = new RTCPeerConnection(config);
  pc.ontrack = (e) => {
    const sink = document.createElement(e.track.kind);
    sink.autoplay = true;
    sink.muted = true;
    sink.srcObject = new MediaStream([e.track]);
    document.body.append(sink);
  };
  pc.addTransceiver("audio", { direction: "recvonly" });
  const video = pc.addTransceiver("video", { direction: "recvonly" });
  if (codecs) video.setCodecPreferences(only(codecs));
  await pc.setLocalDescription(await pc.createOffer());
  return pc.localDescription.sdp;
};
t.answer = async (name, sdp) => { await t.pcs[name].setRemoteDescription({ type: "answer", sdp }); return true; };
// The video stream's counters and its codec, sending or receiving.
t.video = async (name) => {
  const r = await t.pcs[name].getStats(), codecs = {};
  let v = null;
  r.forEach((s) => { if (s.type === "codec") codecs[s.id] = s; });
  r.forEach((s) => {
    if ((s.type === "outbound-rtp" || s.type === "inbound-rtp") && s.kind === "video") {
      v = { packets: s.packetsSent || s.packetsReceived || 0, framesEncoded: s.framesEncoded, framesDecoded: s.framesDecoded,
            frameWidth: s.frameWidth, frameHeight: s.frameHeight, encoder: s.encoderImplementation, decoder: s.decoderImplementation,
            codec: (codecs[s.codecId] || {}).mimeType || null, fmtp: (codecs[s.codecId] || {}).sdpFmtpLine || null,
            scalabilityMode: s.scalabilityMode, freezes: s.freezeCount };
    }
  });
  return v;
};
</script></body></html>
"""


def api(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(NODE + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        return json.load(urllib.request.urlopen(req, timeout=10))
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"{method} {path}: {e.code} {e.read().decode()[:300]}")


class Events:
    """The room's active_talkers events, as they come."""

    def __init__(self, room):
        self.items = []
        self.ws = websocket.create_connection(f"ws://127.0.0.1:8080/v1/events?room={room}", suppress_origin=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while True:
            try:
                self.items.append(json.loads(self.ws.recv()))
            except Exception:
                return

    def video_slot(self, participant):
        maps = [e for e in list(self.items) if e.get("type") == "active_talkers" and e.get("participant") == participant]
        return next((s for s in maps[-1]["slots"] if s["kind"] == "video"), None) if maps else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--speech", required=True, help="the H.264 publisher's microphone (WAV)")
    ap.add_argument("--silence", required=True, help="the other browser's microphone (WAV)")
    args = ap.parse_args()
    server = serve_page(PAGE, "127.0.0.1", 8010)
    profiles = tempfile.mkdtemp()
    room = f"codecs-{os.getpid()}"
    checks, browsers = {}, []
    try:
        pub = Browser("pub", 9301, args.speech, profiles)
        sub = Browser("sub", 9302, args.silence, profiles)
        browsers = [pub, sub]
        for b in browsers:
            b.call("Page.navigate", url=ORIGIN + "/")
            if not wait(lambda: b.eval("typeof window.t === 'object' && document.readyState === 'complete'"), 20):
                raise RuntimeError(f"{b.name}: the page did not load")
        api("POST", "/v1/rooms", {"room": room})
        for who in ("pub", "vp8pub", "sub", "vp8sub"):
            api("POST", f"/v1/rooms/{room}/participants", {"participant": who, "role": "moderator" if who == "vp8sub" else "participant"})
        events = Events(room)

        offer = pub.eval("t.publish('pub', ['video/H264'])")
        offered = {line.split()[0].split(":")[1]: line.split()[1] for line in offer.splitlines() if line.startswith("a=rtpmap:")}
        video_line = next(line for line in offer.splitlines() if line.startswith("m=video"))
        video_names = {offered.get(pt, "?").split("/")[0] for pt in video_line.split()[3:]}
        checks["the publisher offers H.264 (and RTX) only for video"] = video_names <= {"H264", "rtx"} and "H264" in video_names
        answer = api("POST", f"/v1/rooms/{room}/participants/pub/publish", {"sdp": offer})["sdp"]
        video_answer = answer[answer.index("m=video"):]
        checks["the publish answer is H.264 in packetization-mode 1 with its profile-level-id"] = (
            "H264/90000" in video_answer and "packetization-mode=1" in video_answer and "profile-level-id=" in video_answer
            and not video_answer.startswith("m=video 0 "))
        pub.eval(f"t.answer('pub', {json.dumps(answer)})")
        offer = sub.eval("t.publish('vp8pub', ['video/VP8'])")
        sub.eval(f"t.answer('vp8pub', {json.dumps(api('POST', f'/v1/rooms/{room}/participants/vp8pub/publish', {'sdp': offer})['sdp'])})")

        for who, codecs in (("sub", "null"), ("vp8sub", "['video/VP8']")):
            offer = sub.eval(f"t.subscribe('{who}', {codecs})")
            answer = api("POST", f"/v1/rooms/{room}/participants/{who}/subscribe", {"sdp": offer})["sdp"]
            sub.eval(f"t.answer('{who}', {json.dumps(answer)})")

        sent = wait(lambda: (lambda v: v if v and (v.get("framesEncoded") or 0) > 30 else None)(pub.eval("t.video('pub')")), 20) or {}
        checks["Chromium encodes the published video in H.264"] = sent.get("codec") == "video/H264"
        # sub's slot goes to pub once pub talks (the dominant speaker; vp8pub is silent).
        wait(lambda: (events.video_slot("sub") or {}).get("participant") == "pub", 20)
        decoding = lambda codec, more_than: (lambda v: v if v and v.get("codec") == codec and (v.get("framesDecoded") or 0) > more_than
                                             and v.get("frameWidth") else None)(sub.eval("t.video('sub')"))
        got = wait(lambda: decoding("video/H264", 30), 20) or {}
        slot = events.video_slot("sub") or {}
        checks["sub's slot map names pub, in H.264, decodable"] = (
            slot.get("participant") == "pub" and slot.get("codec") == "h264" and slot.get("decodable") is True)
        checks["sub decodes pub's H.264 frames at pub's size"] = (
            got.get("codec") == "video/H264" and (got.get("framesDecoded") or 0) > 30 and got.get("frameWidth") == sent.get("frameWidth"))
        time.sleep(2)
        vp8 = sub.eval("t.video('vp8sub')") or {}
        vp8slot = events.video_slot("vp8sub") or {}
        checks["vp8sub's slot map names pub as not decodable"] = (
            vp8slot.get("participant") == "pub" and vp8slot.get("codec") == "h264" and vp8slot.get("decodable") is False)
        stats = next(p for p in api("GET", f"/v1/rooms/{room}/stats")["participants"] if p["participant"] == "vp8sub")
        node_sent = sum(s.get("packets", 0) for s in stats.get("slots", []) if s["kind"] == "video")
        # Chromium counts the node's probe padding (RTX, no payload) in packetsReceived: what matters is that no
        # media arrived - no codec seen, no frame decoded.
        checks["vp8sub is sent no video (the node sent no media packet, Chromium saw no codec and decoded nothing)"] = (
            node_sent == 0 and vp8.get("codec") is None and not vp8.get("framesDecoded"))
        # One slot, two codecs: pub hard-muted (out of the talker list, whose one entry sub's one audio slot
        # allows), the slot shows vp8pub in VP8; lifted, pub talks and takes it back in H.264.
        api("POST", f"/v1/rooms/{room}/participants/pub/hard-mute", {"by": "vp8sub", "audio": True, "video": True})
        to_vp8 = wait(lambda: decoding("video/VP8", (got.get("framesDecoded") or 0) + 30), 15) or {}
        vp8_slot = events.video_slot("sub") or {}
        checks["with pub hard-muted, sub's slot shows vp8pub and Chromium decodes its VP8 on the same receiver"] = (
            vp8_slot.get("participant") == "vp8pub" and vp8_slot.get("codec") == "vp8" and bool(to_vp8))
        api("POST", f"/v1/rooms/{room}/participants/pub/hard-mute", {"by": "vp8sub", "audio": False, "video": False})
        back = wait(lambda: decoding("video/H264", (to_vp8.get("framesDecoded") or 0) + 30), 15) or {}
        checks["with the mute lifted, sub decodes pub's H.264 again on that receiver"] = (
            (events.video_slot("sub") or {}).get("participant") == "pub" and bool(back))
        print(json.dumps({"sent": sent, "received": got, "slot": slot, "vp8sub": vp8, "vp8slot": vp8slot, "vp8sub_node_video_packets": node_sent,
                          "after_mute": to_vp8, "after_unmute": back}))
        api("DELETE", f"/v1/rooms/{room}")

        # VP9 with temporal layers, publisher and subscriber in the silent browser.
        vp9room = room + "-vp9"
        api("POST", "/v1/rooms", {"room": vp9room})
        for who in ("vp9pub", "vp9sub"):
            api("POST", f"/v1/rooms/{vp9room}/participants", {"participant": who})
        offer = sub.eval("t.publish('vp9pub', ['video/VP9'], 'L1T3')")
        answer = api("POST", f"/v1/rooms/{vp9room}/participants/vp9pub/publish", {"sdp": offer})["sdp"]
        sub.eval(f"t.answer('vp9pub', {json.dumps(answer)})")
        offer = sub.eval("t.subscribe('vp9sub', null)")
        sub.eval(f"t.answer('vp9sub', {json.dumps(api('POST', f'/v1/rooms/{vp9room}/participants/vp9sub/subscribe', {'sdp': offer})['sdp'])})")
        vp9_sent = wait(lambda: (lambda v: v if v and (v.get("framesEncoded") or 0) > 30 else None)(sub.eval("t.video('vp9pub')")), 20) or {}
        vp9_got = wait(lambda: (lambda v: v if v and v.get("codec") == "video/VP9" and (v.get("framesDecoded") or 0) > 30
                                and v.get("frameWidth") else None)(sub.eval("t.video('vp9sub')")), 20) or {}
        checks["a VP9 publisher with three temporal layers reaches a subscriber that decodes it at its size"] = (
            vp9_sent.get("codec") == "video/VP9" and vp9_got.get("frameWidth") == vp9_sent.get("frameWidth"))
        print(json.dumps({"vp9_sent": vp9_sent, "vp9_received": vp9_got}))
        api("DELETE", f"/v1/rooms/{vp9room}")
    finally:
        for b in browsers:
            b.proc.kill()
            b.proc.wait()
        server.shutdown()
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}: {name}")
    sys.exit(0 if checks and all(checks.values()) else 1)


if __name__ == "__main__":
    main()
