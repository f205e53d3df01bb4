#!/usr/bin/env python3
"""Real-client interop: aiortc participants publish speech and VP8 video and subscribe to talker slots through
the node's control API, while an events WebSocket consumer records what the node reports.

Run inside a private network namespace (no route out), with the node already serving:
    python3 aiortc_interop.py --api http://127.0.0.1:8080 --speech a.wav --late-speech b.wav --silence s.wav
Prints the measurements as JSON, one line per check, and exits non-zero when a check fails.

How the checks see what happened: audio frames are counted per subscriber m-line (mid); video frames are decoded
and their mean luma identifies the publisher (alice sends bright frames, carol dark ones), so a video slot is
checked against the slot map the node's `active_talkers` event announced for that mid.
"""
import argparse, asyncio, json, sys, time, urllib.request

import aioice.ice
import av
import websockets
from aiortc import RTCBundlePolicy, RTCPeerConnection, RTCConfiguration, RTCSessionDescription, VideoStreamTrack
from aiortc.contrib.media import MediaPlayer
from aiortc.rtp import RtcpReceiverInfo, RtcpRrPacket

# aioice leaves loopback out of host candidates; the node and this test both live on 127.0.0.1 here.
aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"] if use_ipv4 else []

LUMA = {"alice": 200, "carol": 50}


def publisher_of(luma):
    """Who sent a decoded frame: VP8 through aiortc's colour conversions keeps bright and dark apart."""
    return None if luma is None else ("alice" if luma > 110 else "carol")


def api(base, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


class FlatVideo(VideoStreamTrack):
    """Frames of one grey level: the subscriber tells publishers apart by the decoded luma."""

    def __init__(self, luma):
        super().__init__()
        self.planes = None
        self.luma = luma

    async def recv(self):
        pts, time_base = await self.next_timestamp()
        frame = av.VideoFrame(320, 240, "yuv420p")
        if self.planes is None:
            self.planes = [bytes([self.luma]) * frame.planes[0].buffer_size] + [bytes([128]) * p.buffer_size for p in frame.planes[1:]]
        for plane, data in zip(frame.planes, self.planes):
            plane.update(data)
        frame.pts, frame.time_base = pts, time_base
        return frame


class Events:
    """Consumes GET /v1/events?room=... and keeps every event."""

    def __init__(self, base, room):
        self.url = base.replace("http://", "ws://") + f"/v1/events?room={room}"
        self.items = []

    async def start(self):
        self.ws = await websockets.connect(self.url)
        self.task = asyncio.ensure_future(self._read())

    async def _read(self):
        try:
            async for text in self.ws:
                self.items.append(json.loads(text))
        except websockets.ConnectionClosed:
            pass

    async def wait_for(self, predicate, timeout=8.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for e in self.items:
                if predicate(e):
                    return e
            await asyncio.sleep(0.05)
        return None

    def last(self, predicate):
        found = [e for e in self.items if predicate(e)]
        return found[-1] if found else None

    async def close(self):
        await self.ws.close()


class Client:
    """One aiortc peer connection: a publisher or a subscriber, with per-mid reception counters."""

    def __init__(self, base, room, who):
        self.base, self.room, self.who = base, room, who
        # max-bundle as browsers use it with SFUs. aiortc's default (balanced) leaves the second transceiver of
        # the second media kind on a transport that BUNDLE abandons: its receiver never starts (aiortc 1.16).
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[], bundlePolicy=RTCBundlePolicy.MAX_BUNDLE))
        self.frames = {}  # mid -> frames received
        self.luma = {}  # mid -> mean luma of the last decoded video frame
        self.ended = set()  # mids whose track ended
        self.remb_cap = None  # bits/s this subscriber reports in REMB, when set

        @self.pc.on("track")
        def on_track(track):
            mid = next(t.mid for t in self.pc.getTransceivers() if t.receiver.track is track)
            self.frames[mid] = 0

            async def pull():
                while True:
                    try:
                        frame = await track.recv()
                    except Exception:
                        self.ended.add(mid)
                        return
                    self.frames[mid] += 1
                    if track.kind == "video":
                        y = bytes(frame.planes[0])
                        self.luma[mid] = sum(y) / len(y)

            asyncio.ensure_future(pull())

    def publish(self, audio=None, luma=None):
        if audio:
            self.pc.addTransceiver(MediaPlayer(audio, loop=True).audio, direction="sendonly")
        if luma is not None:
            self.pc.addTransceiver(FlatVideo(luma), direction="sendonly")
        return self.negotiate("publish")

    def subscribe(self, audio_slots, video_slots):
        for _ in range(audio_slots):
            self.pc.addTransceiver("audio", direction="recvonly")
        for _ in range(video_slots):
            t = self.pc.addTransceiver("video", direction="recvonly")
            self._control_remb(t.receiver)
        return self.negotiate("subscribe")

    def _control_remb(self, receiver):
        """Emulates a constrained downlink: aiortc's own REMB carries the cap this test sets instead of its
        delay-based estimate (sent every 250 ms while a cap is set)."""
        estimator = receiver._RTCRtpReceiver__remote_bitrate_estimator
        original, last = estimator.add, [0.0]

        def add(**kw):
            result = original(**kw)
            if self.remb_cap is None:
                return result
            now = time.monotonic()
            if now - last[0] < 0.25:
                return None
            last[0] = now
            return (self.remb_cap, [kw["ssrc"]])

        estimator.add = add

    async def negotiate(self, kind):
        """One offer/answer through the node's route; returns what the node made of it ("created", "replaced", ...)."""
        await self.pc.setLocalDescription(await self.pc.createOffer())
        status, reply = api(self.base, "POST", f"/v1/rooms/{self.room}/participants/{self.who}/{kind}", {"sdp": self.pc.localDescription.sdp})
        if status != 200:
            raise RuntimeError(f"{kind} for {self.who}: {status} {reply}")
        await self.pc.setRemoteDescription(RTCSessionDescription(sdp=reply["sdp"], type="answer"))
        return reply.get("change")

    def mids(self, kind):
        return [t.mid for t in self.pc.getTransceivers() if t.kind == kind]

    def count(self, kind):
        return sum(self.frames.get(m, 0) for m in self.mids(kind))

    async def frames_during(self, seconds, kind="audio", mid=None):
        read = (lambda: self.frames.get(mid, 0)) if mid else (lambda: self.count(kind))
        start = read()
        await asyncio.sleep(seconds)
        return read() - start

    def dtls_state(self):
        return self.pc.getTransceivers()[0].receiver.transport.state

    async def wait_closed(self, timeout=5.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.dtls_state() != "closed":
            await asyncio.sleep(0.05)
        return self.dtls_state()


async def lose_dtls_alerts(client):
    """From now on the client's transport drops the DTLS alerts it receives, as if the network lost them:
    it does not learn that the node closed the transport (close_notify), so aiortc keeps sending receiver
    reports on it, as a client whose close_notify was lost does. Returns the list of alerts dropped."""
    ice = client.pc.getTransceivers()[0].receiver.transport.transport
    recv, dropped, in_use = ice._recv, [], asyncio.Event()

    async def recv_without_alerts():
        in_use.set()
        while True:
            data = await recv()
            if data and data[0] == 21:  # DTLS record content type 21: alert
                dropped.append(len(data))
                continue
            return data

    ice._recv = recv_without_alerts
    # The DTLS loop picks the new receive up with the next datagram (media arrives every few ms).
    await asyncio.wait_for(in_use.wait(), 5)
    return dropped


def rtcp_sent(client):
    """RTCP packets (receiver reports and feedback: a subscriber sends nothing else) the client's transport
    has sent so far."""
    return client.pc.getTransceivers()[0].receiver.transport._RTCDtlsTransport__tx_packets


def node_metric(base, name, **labels):
    """The sum of a metric's series (those with `labels`) in the node's /metrics."""
    req = urllib.request.Request(base + "/metrics")
    total = 0.0
    with urllib.request.urlopen(req, timeout=10) as r:
        for line in r.read().decode().splitlines():
            series, _, value = line.rpartition(" ")
            if series.split("{")[0] == name and all(f'{k}="{v}"' in series for k, v in labels.items()):
                total += float(value)
    return total


def node_up(base):
    try:
        return api(base, "GET", "/healthz")[0] == 200
    except OSError:
        return False


def node_drops(base):
    """The node's dropped datagrams by reason."""
    drops = {}
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("sfu_drops_total{") and 'reason="' in line:
                reason = line.split('reason="')[1].split('"')[0]
                drops[reason] = drops.get(reason, 0) + float(line.rpartition(" ")[2])
    return drops


def slot_packets(base, room, who):
    stats = api(base, "GET", f"/v1/rooms/{room}/stats")[1]
    return {s["mid"]: s["packets"] for p in stats.get("participants", []) if p["participant"] == who for s in p["slots"]}


def slot_map(event):
    return {s["mid"]: s["participant"] for s in event["slots"]} if event else {}


async def group_room(base, args, r, checks):
    room = "group"
    api(base, "POST", "/v1/rooms", {"room": room, "max_active_talkers": 2, "stream_bandwidth": 300})
    events = Events(base, room)
    await events.start()
    for who, role in (("mod", "moderator"), ("alice", "participant"), ("bob", "participant"), ("carol", "participant"), ("dave", "participant")):
        api(base, "POST", f"/v1/rooms/{room}/participants", {"participant": who, "role": role})

    alice = Client(base, room, "alice")
    await alice.publish(audio=args.speech, luma=LUMA["alice"])
    bob = Client(base, room, "bob")
    bob.remb_cap = 2_000_000
    await bob.subscribe(audio_slots=2, video_slots=2)
    await asyncio.sleep(1)
    r["bob_audio_frames_4s"] = await bob.frames_during(4)
    r["states"] = [alice.pc.connectionState, bob.pc.connectionState]
    checks["media flows both ways (aiortc publisher -> node -> aiortc subscriber)"] = r["states"] == ["connected", "connected"] and r["bob_audio_frames_4s"] > 100
    dominant = await events.wait_for(lambda e: e["type"] == "dominant_speaker" and e["participant"] == "alice")
    talkers = events.last(lambda e: e["type"] == "active_talkers" and e["participant"] == "bob")
    r["bob_slots_alice"] = slot_map(talkers)
    alice_video = [m for m, p in slot_map(talkers).items() if p == "alice" and m in bob.mids("video")]
    r["alice_video_luma_at_bob"] = [round(bob.luma.get(m, -1)) for m in alice_video]
    checks["the speaker gets the slot and the events say so"] = (
        dominant is not None and "alice" in [t["participant"] for t in talkers["talkers"]]
        and any(p == "alice" for m, p in slot_map(talkers).items() if m in bob.mids("audio")))
    checks["the video slot the slot map names shows that publisher's decoded VP8"] = (
        len(alice_video) == 1 and publisher_of(bob.luma.get(alice_video[0])) == "alice")
    alert2 = await events.wait_for(lambda e: e["type"] == "bandwidth_alert" and e["participant"] == "bob" and e["number_of_videos"] == 2)
    r["alert_2_videos"] = alert2

    # Hard mute: alice's client keeps sending; the node drops her audio.
    status, _ = api(base, "POST", f"/v1/rooms/{room}/participants/alice/hard-mute", {"by": "mod", "audio": True})
    await asyncio.sleep(0.5)
    r["bob_audio_frames_while_alice_muted_2s"] = await bob.frames_during(2)
    mute_event = await events.wait_for(lambda e: e["type"] == "hard_mute" and e.get("participant") == "alice" and e["audio"])
    api(base, "POST", f"/v1/rooms/{room}/participants/alice/hard-mute", {"by": "mod", "audio": False})
    await asyncio.sleep(0.5)
    r["bob_audio_frames_after_unmute_2s"] = await bob.frames_during(2)
    checks["hard mute stops alice's audio at bob although her client sends"] = (
        status == 200 and mute_event is not None and r["bob_audio_frames_while_alice_muted_2s"] <= 15)
    checks["unmute resumes her audio"] = r["bob_audio_frames_after_unmute_2s"] > 50

    # A second speaker: carol starts with 3 s of silence, then talks while alice is hard-muted again.
    api(base, "POST", f"/v1/rooms/{room}/participants/alice/hard-mute", {"by": "mod", "audio": True})
    carol = Client(base, room, "carol")
    await carol.publish(audio=args.late_speech, luma=LUMA["carol"])
    carol_dominant = await events.wait_for(lambda e: e["type"] == "dominant_speaker" and e["participant"] == "carol", timeout=10)
    await asyncio.sleep(2)
    talkers = events.last(lambda e: e["type"] == "active_talkers" and e["participant"] == "bob")
    carol_video = [m for m, p in slot_map(talkers).items() if p == "carol" and m in bob.mids("video")]
    r["bob_slots_carol"] = slot_map(talkers)
    r["carol_video_luma_at_bob"] = [round(bob.luma.get(m, -1)) for m in carol_video]
    r["bob_slot_packets_after_switch"] = slot_packets(base, room, "bob")
    checks["switching speakers switches slots: carol's audio and video reach bob where the map says"] = (
        carol_dominant is not None and any(p == "carol" for m, p in slot_map(talkers).items() if m in bob.mids("audio"))
        and len(carol_video) == 1 and publisher_of(bob.luma.get(carol_video[0])) == "carol")

    # Pins: at most max_active_talkers - 1 = 1; moderators only.
    dave = Client(base, room, "dave")
    await dave.publish(audio=args.silence)
    await asyncio.sleep(1)
    pin = api(base, "POST", f"/v1/rooms/{room}/pins", {"by": "mod", "add": ["dave"]})
    over = api(base, "POST", f"/v1/rooms/{room}/pins", {"by": "mod", "add": ["alice"]})
    not_mod = api(base, "POST", f"/v1/rooms/{room}/pins", {"by": "bob", "add": ["carol"]})
    pinned = await events.wait_for(lambda e: e["type"] == "active_talkers" and e["participant"] == "bob"
                                   and any(t["participant"] == "dave" and t["pinned"] for t in e["talkers"]))
    r["pins"] = [pin[0], over[0], over[1].get("result"), not_mod[0], not_mod[1].get("result")]
    checks["a pinned silent participant joins the talker list; the pin limit and the role are enforced"] = (
        pin[0] == 200 and over[0] == 409 and over[1].get("result") == 6001 and not_mod[0] == 403 and pinned is not None)

    # REMB falls: bob's downlink takes one video, not two.
    bob.remb_cap = 700_000
    alert1 = await events.wait_for(lambda e: e["type"] == "bandwidth_alert" and e["participant"] == "bob" and e["number_of_videos"] == 1)
    await asyncio.sleep(1)
    mids = bob.mids("video")
    per_mid = dict(zip(mids, await asyncio.gather(*[bob.frames_during(2, mid=m) for m in mids])))
    r["alert_1_video"], r["video_frames_per_slot_after_alert_2s"] = alert1, per_mid
    status, stats = api(base, "GET", f"/v1/rooms/{room}/stats")
    r["bob_number_of_videos"] = next(p["number_of_videos"] for p in stats["participants"] if p["participant"] == "bob")
    checks["a subscriber whose REMB falls gets a bandwidth_alert and fewer videos"] = (
        alert2 is not None and alert1 is not None and alert1["stream_bandwidth"] == 300 and r["bob_number_of_videos"] == 1
        and sorted(v > 20 for v in per_mid.values()) == [False, True])

    # Dropping a participant closes its transport; destroying the room closes everyone's.
    status, _ = api(base, "DELETE", f"/v1/rooms/{room}/participants/carol", {"by": "mod"})
    r["carol_dtls_after_drop"] = await carol.wait_closed()
    left = await events.wait_for(lambda e: e["type"] == "participant_state" and e["participant"] == "carol" and e["state"] == "left")
    checks["dropping a participant closes its transport"] = status == 200 and r["carol_dtls_after_drop"] == "closed" and left is not None
    status, _ = api(base, "DELETE", f"/v1/rooms/{room}")
    r["dtls_after_destroy"] = [await c.wait_closed() for c in (alice, bob, dave)]
    destroyed = await events.wait_for(lambda e: e["type"] == "room_destroyed")
    checks["destroying the room closes every transport and says so"] = (
        status == 200 and r["dtls_after_destroy"] == ["closed"] * 3 and destroyed is not None)

    seqs = [e["seq"] for e in events.items if "seq" in e]
    r["events"] = len(events.items)
    checks["events carry type, room, seq, time; seq increases"] = (
        len(seqs) > 10 and seqs == sorted(set(seqs)) and all(e["room"] == room and e["time"] > 1.6e12 for e in events.items))
    await events.close()
    for c in (alice, bob, carol, dave):
        await c.pc.close()


async def resubscribe_room(base, args, r, checks):
    """A subscriber with several slots subscribes again with fewer while its first connection is still open.
    aiortc cannot drop m-lines from a connection it has negotiated (a stopped transceiver stays in its next
    offer, and it refuses the node's answer to an inactive m-line: no ICE credentials on a rejected m-line),
    so the second offer comes from a new RTCPeerConnection: the node replaces the transport (closes the first
    with close_notify, frees it) and media goes on through the remaining slot. The first connection then still
    sends receiver reports (these once crashed the node); the node stays up and holds no more transports."""
    room = "resub"
    api(base, "POST", "/v1/rooms", {"room": room, "max_active_talkers": 3})
    events = Events(base, room)
    await events.start()
    for who in ("alice", "carol", "bob"):
        api(base, "POST", f"/v1/rooms/{room}/participants", {"participant": who})
    alice = Client(base, room, "alice")
    await alice.publish(audio=args.speech, luma=LUMA["alice"])
    carol = Client(base, room, "carol")
    await carol.publish(audio=args.late_speech, luma=LUMA["carol"])
    first = Client(base, room, "bob")
    created = await first.subscribe(audio_slots=2, video_slots=2)
    await asyncio.sleep(5)
    first_audio = {m: first.frames.get(m, 0) for m in first.mids("audio")}
    connections = node_metric(base, "sfu_connections")
    drops_before = node_drops(base)

    alerts = await lose_dtls_alerts(first)
    second = Client(base, room, "bob")
    replaced = await second.subscribe(audio_slots=1, video_slots=1)
    rtcp_at_replace = rtcp_sent(first)
    await asyncio.sleep(1.5)
    audio_frames = await second.frames_during(3)
    # The slot map of the second connection (its mids: one audio, one video).
    def second_map(e):
        return e["type"] == "active_talkers" and e["participant"] == "bob" and sorted(slot_map(e)) == sorted(second.mids("audio") + second.mids("video"))
    await events.wait_for(second_map)
    talkers = events.last(second_map)
    video_mid = second.mids("video")[0]
    in_slot = slot_map(talkers).get(video_mid)
    reports_after_replace = rtcp_sent(first) - rtcp_at_replace
    if not node_up(base):
        r["resubscribe"] = {"changes": [created, replaced], "rtcp_from_first_after_replace": reports_after_replace, "node_up": False}
        checks["the replaced connection's receiver reports leave the node up and holding no more transports"] = False
        return
    healthz = api(base, "GET", "/healthz")
    r["resubscribe"] = {
        "changes": [created, replaced], "first_audio_frames": first_audio, "alerts_to_first": alerts,
        "first_connection": first.pc.connectionState, "rtcp_from_first_after_replace": reports_after_replace,
        "second_audio_frames_3s": audio_frames,
        "slots": slot_map(talkers), "video_luma": round(second.luma.get(video_mid, -1)), "healthz": healthz,
        "connections": [connections, node_metric(base, "sfu_connections")],
        "drops": {k: v - drops_before.get(k, 0) for k, v in node_drops(base).items() if v > drops_before.get(k, 0)},
        "node_slots": slot_packets(base, room, "bob"),
    }
    checks["a subscriber re-subscribes with fewer slots while its first connection is open: the node replaces it, media goes on"] = (
        created == "created" and all(n > 50 for n in first_audio.values()) and len(first_audio) == 2
        and replaced == "replaced" and len(alerts) >= 1 and audio_frames > 100
        and len(slot_packets(base, room, "bob")) == 2 and in_slot in ("alice", "carol")
        and publisher_of(second.luma.get(video_mid)) == in_slot)
    checks["the replaced connection's receiver reports leave the node up and holding no more transports"] = (
        first.pc.connectionState == "connected" and reports_after_replace >= 10 and healthz[0] == 200
        and r["resubscribe"]["connections"] == [3, 3] and sum(r["resubscribe"]["drops"].values()) >= reports_after_replace)

    await events.close()
    for c in (alice, carol, first, second):
        await c.pc.close()
    api(base, "DELETE", f"/v1/rooms/{room}")
    await asyncio.sleep(0.5)
    r["connections_after_resubscribe_room"] = node_metric(base, "sfu_connections")
    checks["after the room is gone the node holds no transports"] = r["connections_after_resubscribe_room"] == 0


async def lecture_room(base, args, r, checks):
    room = "lecture"
    api(base, "POST", "/v1/rooms", {"room": room, "mode": "lecture", "max_active_talkers": 2})
    events = Events(base, room)
    await events.start()
    for who, role in (("prof", "moderator"), ("erin", "participant"), ("frank", "participant")):
        api(base, "POST", f"/v1/rooms/{room}/participants", {"participant": who, "role": role})
    erin = Client(base, room, "erin")
    await erin.publish(audio=args.speech)
    frank = Client(base, room, "frank")
    await frank.subscribe(audio_slots=1, video_slots=0)
    await asyncio.sleep(1.5)
    r["frank_frames_without_floor_3s"] = await frank.frames_during(3)
    api(base, "POST", f"/v1/rooms/{room}/floor", {"by": "erin", "action": "request"})
    grant = api(base, "POST", f"/v1/rooms/{room}/floor", {"by": "prof", "action": "grant", "target": "erin"})
    await asyncio.sleep(1)
    r["frank_frames_with_floor_2s"] = await frank.frames_during(2)
    api(base, "POST", f"/v1/rooms/{room}/floor", {"by": "prof", "action": "release", "target": "erin"})
    await asyncio.sleep(0.5)
    r["frank_frames_after_release_2s"] = await frank.frames_during(2)
    floor_events = [e["action"] for e in events.items if e["type"] == "floor"]
    r["floor_events"] = floor_events
    checks["lecture mode: only the floor holder is heard"] = (
        r["frank_frames_without_floor_3s"] <= 10 and grant[0] == 200 and r["frank_frames_with_floor_2s"] > 50
        and r["frank_frames_after_release_2s"] <= 15 and floor_events[:3] == ["request", "grant", "release"])
    await events.close()
    for c in (erin, frank):
        await c.pc.close()
    api(base, "DELETE", f"/v1/rooms/{room}")


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", default="http://127.0.0.1:8080")
    ap.add_argument("--speech", required=True, help="speech from the start (alice, erin)")
    ap.add_argument("--late-speech", required=True, help="silence, then speech (carol)")
    ap.add_argument("--silence", required=True, help="silence (dave, pinned)")
    args = ap.parse_args()
    results, checks = {}, {}
    for stage in (group_room, resubscribe_room, lecture_room):
        if not node_up(args.api):
            checks[f"the node is up for {stage.__name__}"] = False
            break
        await stage(args.api, args, results, checks)
    print(json.dumps(results, default=str))
    for name, ok in checks.items():
        print(("ok   " if ok else "FAIL ") + name)
    print(f"interop: {sum(checks.values())} passed, {len(checks) - sum(checks.values())} failed")
    sys.exit(0 if checks and all(checks.values()) else 1)


asyncio.run(main())
