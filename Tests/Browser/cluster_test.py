#!/usr/bin/env python3
"""Two headless Chromium browsers in one room across two nodes of a cluster, then kill -9 of the talker's node.

Run inside the clients' namespace of scripts/cluster-test.sh, with the example signaling server serving the
demo page at --page and two nodes (room for one participant each) behind it:
    python3 cluster_test.py --page http://10.214.0.1:8000/ --nodes a=http://10.214.0.11:8080,b=... \
        --key KEY --pids a=PID,b=PID --speech speech.wav --silence silence.wav
Alice (talking) and Bob (silent) join one room; the registry puts them on different nodes, so Bob hears Alice
only through the relay between the nodes. Then Alice's node is killed with SIGKILL: the survivor reports it
(node_lost), the signaling server tells Alice's page to rejoin, the page joins again and is placed on the
survivor, and Bob hears her again. Prints how long that took.
"""
import argparse, asyncio, json, os, shutil, signal, sys, tempfile, time, urllib.error, urllib.request

from demo_test import Browser, wait, audio_mids_of, packets_per_mid


def call(url, key, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


async def aiortc_listener(nodes, key, room, seconds, talker):
    """An aiortc subscriber placed through the cluster (asked of node a): which node it lands on, and the audio
    frames it decodes in `seconds` on the slot its node says shows `talker`."""
    from aiortc import RTCBundlePolicy, RTCConfiguration, RTCPeerConnection, RTCSessionDescription
    status, placed = call(nodes["a"], key, "POST", "/v1/placements", {"room": room, "participant": "erin"})
    if status != 200:
        raise RuntimeError(f"placement: {status} {placed}")
    node = placed["control_url"]
    call(node, key, "POST", "/v1/rooms", {"room": room})  # 201, or 6009 when it is there already
    status, reply = call(node, key, "POST", f"/v1/rooms/{room}/participants", {"participant": "erin", "name": "Erin"})
    if status != 201:
        raise RuntimeError(f"admit: {status} {reply}")
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[], bundlePolicy=RTCBundlePolicy.MAX_BUNDLE))
    frames = {}  # mid -> audio frames decoded

    @pc.on("track")
    def on_track(track):
        mid = next(t.mid for t in pc.getTransceivers() if t.receiver.track is track)
        frames[mid] = 0

        async def pull():
            while True:
                try:
                    await track.recv()
                except Exception:
                    return
                frames[mid] += 1
        asyncio.ensure_future(pull())

    for _ in range(2):
        pc.addTransceiver("audio", direction="recvonly")
    await pc.setLocalDescription(await pc.createOffer())
    status, reply = call(node, key, "POST", f"/v1/rooms/{room}/participants/erin/subscribe", {"sdp": pc.localDescription.sdp})
    if status != 200:
        raise RuntimeError(f"subscribe: {status} {reply}")
    await pc.setRemoteDescription(RTCSessionDescription(sdp=reply["sdp"], type="answer"))
    await asyncio.sleep(seconds)
    _, stats = call(node, key, "GET", f"/v1/rooms/{room}/stats")
    slots = [s for p in stats.get("participants", []) if p["participant"] == "erin" for s in p["slots"]]
    shown = [s["mid"] for s in slots if s.get("participant") == talker]
    await pc.close()
    call(node, key, "DELETE", f"/v1/rooms/{room}/participants/erin", {})
    return placed["node"], sum(frames.get(m, 0) for m in shown)


def room_participants(url, key, room):
    req = urllib.request.Request(f"{url}/v1/rooms/{room}", headers={"Authorization": f"Bearer {key}"})
    try:
        # This node's own participants (a relayed one names the node it is on in `origin`).
        return [p["participant"] for p in json.load(urllib.request.urlopen(req, timeout=5))["participants"] if p.get("origin") is None]
    except Exception:
        return []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--page", required=True)
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--pids", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--speech", required=True)
    ap.add_argument("--silence", required=True)
    args = ap.parse_args()
    nodes = dict(kv.split("=", 1) for kv in args.nodes.split(","))
    pids = {k: int(v) for k, v in (kv.split("=", 1) for kv in args.pids.split(","))}
    import demo_test
    demo_test.PAGE = args.page
    checks = {}
    profiles = tempfile.mkdtemp()
    # The page is not on localhost: getUserMedia needs its origin treated as secure.
    origin = args.page.rstrip("/")
    extra = [f"--unsafely-treat-insecure-origin-as-secure={origin}"]
    alice = Browser("alice", 9321, args.speech, profiles, extra)
    bob = Browser("bob", 9322, args.silence, profiles, extra)
    try:
        room = "span"
        checks["alice joined"] = bool(alice.join(room, "participant"))
        checks["bob joined"] = bool(bob.join(room, "participant"))
        for b in (alice, bob):
            if not b.demo("joined") or not b.demo("kinds"):
                print(f"{b.name}: joined {b.demo('joined')}, kinds {b.demo('kinds')}, errors {b.demo('errors')}, changes {b.demo('changes')}")
        a_id, b_id = alice.demo("participant"), bob.demo("participant")
        where = {p: n for n, url in nodes.items() for p in room_participants(url, args.key, room) if p in (a_id, b_id)}
        print(f"alice ({a_id}) on node {where.get(a_id)}, bob ({b_id}) on node {where.get(b_id)}")
        checks["alice and bob on different nodes"] = where.get(a_id) is not None and where.get(b_id) not in (None, where.get(a_id))
        # Bob hears Alice through the relay: a slot of his shows her and receives audio.
        mids = wait(lambda: audio_mids_of(bob, a_id), 20)
        counts, _ = packets_per_mid(bob, 3)
        heard = sum(counts.get(m, 0) for m in (mids or []))
        print(f"bob's slots for alice: {mids}, {heard} audio packets in 3 s")
        checks["bob hears alice across the relay"] = heard > 50
        # aiortc, a third-party client, on the node Alice is not on: it hears her through the relay too.
        try:
            erin_node, erin_frames = asyncio.run(aiortc_listener(nodes, args.key, room, 6, a_id))
        except Exception as e:
            erin_node, erin_frames = None, 0
            print(f"aiortc listener failed: {e}")
        print(f"aiortc listener (erin) on node {erin_node}: {erin_frames} audio frames of alice's slot decoded in 6 s")
        checks["an aiortc listener on the other node hears alice through the relay"] = \
            erin_node is not None and erin_node != where.get(a_id) and erin_frames > 100
        # kill -9 of Alice's node.
        dead = where.get(a_id)
        if dead:
            killed = time.monotonic()
            os.kill(pids[dead], signal.SIGKILL)
            # Each step timed on a 50 ms poll: told to rejoin, joined again, in one of bob's slots, heard (5 packets).
            def since_kill(predicate, timeout):
                deadline = killed + timeout
                while time.monotonic() < deadline:
                    if predicate():
                        return time.monotonic() - killed
                    time.sleep(0.05)
                return None
            told = since_kill(lambda: (alice.demo("rejoins") or 0) >= 1, 30)
            rejoined = since_kill(lambda: (alice.demo("rejoins") or 0) >= 1 and alice.demo("joined") and alice.demo("participant") != a_id, 30)
            checks["alice's page was told to rejoin and joined again"] = rejoined is not None
            new_id = alice.demo("participant")
            slotted = since_kill(lambda: audio_mids_of(bob, new_id), 30)
            before = bob.demo("audioPackets") or {}
            back = since_kill(lambda: sum((bob.demo("audioPackets") or {}).get(m, 0) - before.get(m, 0) for m in audio_mids_of(bob, new_id)) > 5, 30)
            def s(v): return "never" if v is None else f"{v:.2f} s"
            print(f"after the kill: alice's page told to rejoin {s(told)}, joined again as {new_id} {s(rejoined)}, "
                  f"in a slot of bob's {s(slotted)}, heard by bob (5 packets) {s(back)}")
            checks["bob hears alice again after her node was killed"] = back is not None
    finally:
        alice.close()
        bob.close()
        shutil.rmtree(profiles, ignore_errors=True)
    failed = [k for k, ok in checks.items() if not ok]
    for k, ok in checks.items():
        print(("ok   " if ok else "FAIL ") + k)
    print(f"cluster browser: {len(checks) - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
