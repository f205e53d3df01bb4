#!/usr/bin/env python3
"""Real-client interop: aiortc publishes speech and subscribes through the node's control API.

Run inside a private network namespace (no route out), with the node already serving:
    python3 aiortc_interop.py --api http://127.0.0.1:8080 --speech speech.wav
Prints one JSON line of results; exits non-zero when a check fails.
"""
import argparse, asyncio, json, sys, urllib.request

import aioice.ice
from aiortc import RTCPeerConnection, RTCConfiguration, RTCSessionDescription
from aiortc.contrib.media import MediaPlayer

# aioice leaves loopback out of host candidates; the node and this test both live on 127.0.0.1 here.
_orig = aioice.ice.get_host_addresses
aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"] if use_ipv4 else []


def api(base, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


async def negotiate(pc, base, room, who, kind):
    await pc.setLocalDescription(await pc.createOffer())
    status, reply = api(base, "POST", f"/v1/rooms/{room}/participants/{who}/{kind}", {"sdp": pc.localDescription.sdp})
    if status != 200:
        raise RuntimeError(f"{kind} for {who}: {status} {reply}")
    await pc.setRemoteDescription(RTCSessionDescription(sdp=reply["sdp"], type="answer"))


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", default="http://127.0.0.1:8080")
    ap.add_argument("--speech", required=True)
    ap.add_argument("--seconds", type=float, default=6)
    args = ap.parse_args()
    base, room = args.api, "interop"
    results = {}
    api(base, "POST", "/v1/rooms", {"room": room})
    for who in ("alice", "bob"):
        api(base, "POST", f"/v1/rooms/{room}/participants", {"participant": who})

    publisher = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    player = MediaPlayer(args.speech, loop=True)
    publisher.addTransceiver(player.audio, direction="sendonly")
    await negotiate(publisher, base, room, "alice", "publish")

    subscriber = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    subscriber.addTransceiver("audio", direction="recvonly")
    received = {"frames": 0}

    @subscriber.on("track")
    def on_track(track):
        async def pull():
            while True:
                try:
                    await track.recv()
                    received["frames"] += 1
                except Exception:
                    return
        asyncio.ensure_future(pull())

    await negotiate(subscriber, base, room, "bob", "subscribe")
    await asyncio.sleep(args.seconds)
    results["publisher_state"] = publisher.connectionState
    results["subscriber_state"] = subscriber.connectionState
    results["frames_received"] = received["frames"]
    status, snapshot = api(base, "GET", f"/v1/rooms/{room}")
    results["dominant_speaker"] = snapshot.get("dominant_speaker")
    await publisher.close()
    await subscriber.close()
    print(json.dumps(results))
    ok = results["publisher_state"] == "connected" and results["subscriber_state"] == "connected" \
        and results["frames_received"] > 50 * args.seconds * 0.5 and results["dominant_speaker"] == "alice"
    sys.exit(0 if ok else 1)


asyncio.run(main())
