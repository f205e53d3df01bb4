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


async def frames_during(counter, seconds):
    start = counter["frames"]
    await asyncio.sleep(seconds)
    return counter["frames"] - start


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", default="http://127.0.0.1:8080")
    ap.add_argument("--speech", required=True, help="speech from the start (alice)")
    ap.add_argument("--late-speech", required=True, help="silence, then speech (carol)")
    args = ap.parse_args()
    base, room = args.api, "interop"
    results = {}
    api(base, "POST", "/v1/rooms", {"room": room, "max_active_talkers": 2})
    for who, role in (("mod", "moderator"), ("alice", "participant"), ("carol", "participant"), ("bob", "participant")):
        api(base, "POST", f"/v1/rooms/{room}/participants", {"participant": who, "role": role})

    alice = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    alice.addTransceiver(MediaPlayer(args.speech, loop=True).audio, direction="sendonly")
    await negotiate(alice, base, room, "alice", "publish")

    bob = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    bob.addTransceiver("audio", direction="recvonly")
    counter = {"frames": 0}

    @bob.on("track")
    def on_track(track):
        async def pull():
            while True:
                try:
                    await track.recv()
                    counter["frames"] += 1
                except Exception:
                    return
        asyncio.ensure_future(pull())

    await negotiate(bob, base, room, "bob", "subscribe")
    results["frames_first_4s"] = await frames_during(counter, 4)
    results["alice_state"], results["bob_state"] = alice.connectionState, bob.connectionState
    results["dominant_before"] = api(base, "GET", f"/v1/rooms/{room}")[1].get("dominant_speaker")

    # Hard mute: alice's client keeps sending; the node must drop it.
    status, _ = api(base, "POST", f"/v1/rooms/{room}/participants/alice/hard-mute", {"by": "mod", "audio": True})
    results["mute_status"] = status
    await asyncio.sleep(0.5)
    results["frames_while_muted_2s"] = await frames_during(counter, 2)
    api(base, "POST", f"/v1/rooms/{room}/participants/alice/hard-mute", {"by": "mod", "audio": False})
    await asyncio.sleep(0.5)
    results["frames_after_unmute_2s"] = await frames_during(counter, 2)

    # A second speaker: carol starts with silence, then talks while alice is muted again.
    api(base, "POST", f"/v1/rooms/{room}/participants/alice/hard-mute", {"by": "mod", "audio": True})
    carol = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    carol.addTransceiver(MediaPlayer(args.late_speech, loop=False).audio, direction="sendonly")
    await negotiate(carol, base, room, "carol", "publish")
    await asyncio.sleep(6)
    snapshot = api(base, "GET", f"/v1/rooms/{room}")[1]
    results["dominant_after"] = snapshot.get("dominant_speaker")
    results["carol_state"] = carol.connectionState
    status, stats = api(base, "GET", f"/v1/rooms/{room}/stats")
    results["bob_slot"] = [s.get("participant") for p in stats.get("participants", []) if p["participant"] == "bob" for s in p["slots"]]

    for pc in (alice, bob, carol):
        await pc.close()
    print(json.dumps(results))
    checks = {
        "connected": results["alice_state"] == "connected" and results["bob_state"] == "connected" and results["carol_state"] == "connected",
        "audio flows": results["frames_first_4s"] > 100,
        "alice dominant": results["dominant_before"] == "alice",
        "hard mute stops alice at bob": results["mute_status"] == 200 and results["frames_while_muted_2s"] <= 15,
        "unmute resumes": results["frames_after_unmute_2s"] > 50,
        "carol takes over": results["dominant_after"] == "carol" and "carol" in results["bob_slot"],
    }
    for name, ok in checks.items():
        print(("ok   " if ok else "FAIL ") + name)
    sys.exit(0 if all(checks.values()) else 1)


asyncio.run(main())
