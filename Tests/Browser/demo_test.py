#!/usr/bin/env python3
"""Three headless Chromium browsers on the demo page (`sfu demo`), driven through the DevTools protocol.

Run inside a private network namespace with `sfu demo` serving on 127.0.0.1:8000:
    python3 demo_test.py --speech speech.wav --late late.wav --silence silence.wav --screenshot demo.png
Each browser's microphone is a WAV file (Chromium's fake capture): alice talks all the time, bob is silent for
14 s and then talks, carol (the moderator) is silent. The checks read what each page knows (`window.demo`:
the slot map, the dominant speaker, packets received per slot from getStats), use the page's own buttons, its
talkers input and its functions (`demo.setTalkers`, `demo.restartIce`): carol's receiving connection shrinks to
one slot of each kind and grows to two again, and ICE restarts on two connections, all on the same
RTCPeerConnections while media flows; the node's /metrics say how many transports it holds.
"""
import argparse, base64, json, os, subprocess, sys, tempfile, time, urllib.request

import websocket

CHROMIUM = "/usr/lib/chromium/chromium"
PAGE = "http://127.0.0.1:8000/"
NODE = "http://127.0.0.1:8080"
# The signaling server decides who moderates, not the page: `sfu demo --moderator-key` makes a browser that
# joins with this key a moderator (scripts/browser-test.sh starts the demo with it).
MODERATOR_KEY = os.environ.get("SFU_DEMO_MODERATOR_KEY", "")


class Browser:
    def __init__(self, name, port, audio, profile_root, extra=()):
        self.name = name
        self.proc = subprocess.Popen([
            CHROMIUM, "--headless=new", "--no-sandbox", "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
            f"--use-file-for-fake-audio-capture={audio}%noloop", "--allow-loopback-in-peer-connection",
            "--disable-features=WebRtcHideLocalIpsWithMdns", "--autoplay-policy=no-user-gesture-required",
            f"--remote-debugging-port={port}", f"--user-data-dir={profile_root}/{name}", "--window-size=1280,860", *extra, "about:blank",
        ], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json"))
                page = next(t for t in targets if t["type"] == "page")
                break
            except Exception:
                time.sleep(0.2)
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], suppress_origin=True)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == self.next_id:
                return m

    def eval(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return r.get("result", {}).get("result", {}).get("value")

    def join(self, room, role, mode="group", knock=False):
        """Joins with the page's own form; a moderator with the demo's moderator key. True once joined with that
        role and its slots set up."""
        key = ""
        if role == "moderator":
            assert MODERATOR_KEY, "set SFU_DEMO_MODERATOR_KEY to the --moderator-key sfu demo was started with"
            key = f"&moderator_key={MODERATOR_KEY}"
        url = f"{PAGE}?room={room}&name={self.name.capitalize()}{key}&mode={mode}{'&knock=1' if knock else ''}&autojoin=1"
        self.call("Page.navigate", url=url)
        return wait(lambda: self.eval(f"window.demo && window.demo.joined && demo.role === '{role}' "
                                      "&& Object.keys(demo.kinds).length === 2 * demo.maxTalkers"), 20)

    def demo(self, field):
        value = self.eval(f"JSON.stringify(window.demo && window.demo.{field})")
        return json.loads(value) if value else None

    def click(self, action, target=""):
        selector = f'button[data-action="{action}"]' + (f'[data-target="{target}"]' if target else "")
        return self.eval(f"(() => {{ const b = document.querySelector('{selector}'); if (!b) return false; b.click(); return true; }})()")

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["result"]["data"]
        open(path, "wb").write(base64.b64decode(data))

    def close(self):
        self.proc.kill()


def report(checks, title):
    """Prints each check and exits: 1 when one failed (or there were none)."""
    for name, ok in checks.items():
        print(("ok   " if ok else "FAIL ") + name)
    failed = [n for n, ok in checks.items() if not ok]
    print(f"{title}: {len(checks) - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed or not checks else 0)


def wait(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    return None


def packets_per_mid(browser, seconds):
    """Audio packets each slot (mid) received during `seconds`, and the slot map at the end."""
    before = browser.demo("audioPackets") or {}
    time.sleep(seconds)
    after = browser.demo("audioPackets") or {}
    return {mid: after.get(mid, 0) - before.get(mid, 0) for mid in after}, browser.demo("slots") or {}


def audio_mids_of(browser, who):
    kinds, slots = browser.demo("kinds") or {}, browser.demo("slots") or {}
    return [m for m, p in slots.items() if p == who and kinds.get(m) == "audio"]


def mids_of_kind(browser, kind):
    return sorted((m for m, k in (browser.demo("kinds") or {}).items() if k == kind), key=int)


def node_metric(name, **labels):
    """The sum of a metric's series (those with `labels`) in the node's /metrics."""
    total = 0.0
    for line in urllib.request.urlopen(NODE + "/metrics", timeout=5).read().decode().splitlines():
        series, _, value = line.rpartition(" ")
        if series.split("{")[0] == name and all(f'{k}="{v}"' in series for k, v in labels.items()):
            total += float(value)
    return total


def node_slots(participant, room="standup"):
    """A subscriber's slots as the node's stats say: mid -> [participant, packets sent]."""
    stats = json.load(urllib.request.urlopen(f"{NODE}/v1/rooms/{room}/stats", timeout=5))
    return {s["mid"]: [s.get("participant"), s.get("packets")] for p in stats["participants"] if p["participant"] == participant for s in p["slots"]}


def node_up():
    try:
        return urllib.request.urlopen(NODE + "/healthz", timeout=5).status == 200
    except Exception:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--speech", required=True)
    ap.add_argument("--late", required=True)
    ap.add_argument("--silence", required=True)
    ap.add_argument("--screenshot")
    args = ap.parse_args()
    checks, r = {}, {}
    profiles = tempfile.mkdtemp()
    carol = Browser("carol", 9301, args.silence, profiles)
    alice = Browser("alice", 9302, args.speech, profiles)
    bob = Browser("bob", 9303, args.late, profiles)
    try:
        joined = [carol.join("standup", "moderator"), alice.join("standup", "participant"), bob.join("standup", "participant")]
        ids = {b.name: b.demo("participant") for b in (carol, alice, bob)}
        r["ids"] = ids
        checks["three browsers join, publish and subscribe through the signaling server"] = all(joined)

        # alice talks: she becomes the dominant speaker on the other pages, in a slot with her label. She usually
        # becomes it before bob's page has joined: his page learns it from the `joined` message, not an event.
        started = time.monotonic()
        dominant = wait(lambda: carol.demo("dominant") == ids["alice"] and bob.demo("dominant") == ids["alice"], 30)
        r["alice_dominant_seconds"] = round(time.monotonic() - started, 1)
        def alice_in_a_video_tile():
            kinds, slots, frames = carol.demo("kinds") or {}, carol.demo("slots") or {}, carol.demo("videoFrames") or {}
            labels = carol.eval("[...document.querySelectorAll('.tile:not([hidden]) .label')].map(l => l.textContent)") or []
            video = [m for m, p in slots.items() if p == ids["alice"] and kinds.get(m) == "video"]
            return "Alice" in labels and len(video) == 1 and frames.get(video[0], 0) > 10
        in_tile = wait(alice_in_a_video_tile, 20)
        labels = carol.eval("[...document.querySelectorAll('.tile:not([hidden]) .label')].map(l => l.textContent)")
        frames = carol.demo("videoFrames")
        checks["the speaker becomes the dominant speaker on the others' pages, in a labelled slot with video"] = (
            bool(dominant) and bool(in_tile) and len(audio_mids_of(carol, ids["alice"])) == 1)

        # The moderator hard-mutes alice with the page's button: her audio stops reaching the others.
        mids = audio_mids_of(carol, ids["alice"])
        clicked = carol.click("mute-audio", ids["alice"])
        time.sleep(1.5)
        deltas, slots = packets_per_mid(carol, 3)
        muted_deltas = [deltas.get(m, 0) for m in mids if slots.get(m) == ids["alice"]]
        r["after_mute"] = {"clicked": clicked, "mids": mids, "deltas": deltas, "slots": slots}
        checks["a moderator's hard mute silences that participant at the others"] = (
            clicked and all(d <= 5 for d in muted_deltas) and not any(deltas.get(m, 0) > 5 for m, p in slots.items() if p == ids["alice"]))

        # bob starts talking (his file: 14 s of silence first): the slots follow him.
        bob_dominant = wait(lambda: carol.demo("dominant") == ids["bob"], 40)
        bob_mids = audio_mids_of(carol, ids["bob"])
        deltas, _ = packets_per_mid(carol, 2)
        bob_tile = wait(lambda: "Bob" in (carol.eval("[...document.querySelectorAll('.tile:not([hidden]) .label')].map(l => l.textContent)") or []), 15)
        r["bob"] = {"dominant": carol.demo("dominant"), "mids": bob_mids, "deltas": deltas, "talkers": carol.demo("talkers"),
                    "video_tile": bool(bob_tile), "number_of_videos": carol.demo("numberOfVideos")}
        if args.screenshot:
            carol.screenshot(args.screenshot)
        checks["when a second participant speaks, the dominant speaker and the slots follow"] = (
            bool(bob_dominant) and len(bob_mids) == 1 and deltas.get(bob_mids[0], 0) > 50 and bool(bob_tile))

        # Renegotiation on the same RTCPeerConnection: with alice unmuted, alice and bob both talk. Carol's page
        # shrinks her receiving connection to one slot of each kind (talker_count 1, three transceivers of each
        # kind stopped), then grows it to two (new transceivers): each time one new offer on the same connection,
        # which the node answers "renegotiated". The slot that stays keeps flowing (same stream: its packet
        # counter goes on), the new one fills.
        carol.click("unmute-audio", ids["alice"])
        time.sleep(2)
        connections = node_metric("sfu_connections")
        carol.eval("window.receivingPC = subscribePC, true")
        kept = mids_of_kind(carol, "audio")[0]
        kept_before = (carol.demo("audioPackets") or {}).get(kept, 0)
        shrink = carol.eval("demo.setTalkers(1)") or {}
        shrunk = wait(lambda: len(carol.demo("kinds") or {}) == 2, 5)
        time.sleep(1.5)
        kept_deltas, shrunk_slots = packets_per_mid(carol, 2)
        r["renegotiation_node_slots"] = node_slots(ids["carol"])
        # Growing goes through the page's own control: the talkers input, as a user would change it.
        carol.eval("(() => { const input = document.querySelector('#talker-count'); input.value = 2; input.dispatchEvent(new Event('change')); })()")
        grown = wait(lambda: len(carol.demo("kinds") or {}) == 4 and len((carol.demo("changes") or {}).get("subscribe", [])) == 3, 10)
        grow = {"change": (carol.demo("changes") or {}).get("subscribe", [None])[-1], "grown": bool(grown)}
        new_audio = [m for m in mids_of_kind(carol, "audio") if m != kept]
        filled = wait(lambda: len(new_audio) == 1 and (carol.demo("slots") or {}).get(new_audio[0]) in (ids["alice"], ids["bob"]), 10)
        time.sleep(1.5)
        grown_deltas, slots = packets_per_mid(carol, 3)
        kept_after = (carol.demo("audioPackets") or {}).get(kept, 0)
        same_pc = carol.eval("window.receivingPC === subscribePC")
        r["renegotiation"] = {"connections": connections, "shrink": shrink, "grow": grow, "kept": kept, "new_audio": new_audio,
                              "kinds": carol.demo("kinds"), "kept_deltas": kept_deltas, "shrunk_slots": shrunk_slots, "grown_deltas": grown_deltas,
                              "slots": slots, "kept_packets": [kept_before, kept_after], "same_pc": same_pc}
        checks["a Chromium subscriber renegotiates its slots on the same connection: fewer, then one more that fills while the old one flows"] = (
            shrink.get("change") == "renegotiated" and bool(shrunk) and kept_deltas.get(kept, 0) > 50
            and grow.get("change") == "renegotiated" and len(carol.demo("kinds") or {}) == 4 and bool(filled)
            and grown_deltas.get(new_audio[0], 0) > 50 and grown_deltas.get(kept, 0) > 50
            and kept_after > kept_before and same_pc is True)

        # ICE restart: carol's receiving connection and alice's sending connection call restartIce() and
        # renegotiate; the node answers with new ICE credentials ("iceRestarted"), DTLS and SRTP go on, and
        # media keeps flowing: alice's audio still reaches carol.
        ufrag = "(subscribePC.remoteDescription.sdp.match(/a=ice-ufrag:(\\S+)/) || [])[1]"
        ufrag_before = carol.eval(ufrag)
        restarted = [carol.eval("demo.restartIce('subscribe')"), alice.eval("demo.restartIce('publish')")]
        time.sleep(2)
        deltas, slots = packets_per_mid(carol, 3)
        alice_after_restart = audio_mids_of(carol, ids["alice"])
        ice = [carol.eval("subscribePC.iceConnectionState"), alice.eval("publishPC.iceConnectionState")]
        r["ice_restart"] = {"changes": restarted, "ufrags": [ufrag_before, carol.eval(ufrag)], "deltas": deltas,
                            "alice_mids": alice_after_restart, "ice": ice,
                            "same_pc": carol.eval("window.receivingPC === subscribePC")}
        checks["Chromium restarts ICE on a receiving and a sending connection: new credentials, media goes on"] = (
            restarted == ["iceRestarted", "iceRestarted"] and ufrag_before != carol.eval(ufrag)
            and all(s in ("connected", "completed") for s in ice) and len(alice_after_restart) == 1
            and deltas.get(alice_after_restart[0], 0) > 50 and sum(deltas.values()) > 200)

        # The node is still up and holds as many transports as before: renegotiations and restarts made none.
        time.sleep(1)
        r["node_after"] = {"up": node_up(), "connections": node_metric("sfu_connections"),
                           "transport_events": {e: node_metric("sfu_transport_events_total", event=e)
                                                for e in ("created", "renegotiated", "ice_restarted", "replaced")},
                           "participants": len(json.load(urllib.request.urlopen(f"{NODE}/v1/rooms/standup", timeout=5))["participants"])}
        checks["after renegotiations and ICE restarts the node is up and holds no more connections"] = (
            r["node_after"]["up"] and connections == 6 and r["node_after"]["connections"] == connections
            and r["node_after"]["transport_events"]["replaced"] == 0 and r["node_after"]["participants"] == 3)

        # Lecture mode: only the floor holder is heard.
        lecture = [carol.join("hall", "moderator", "lecture"), alice.join("hall", "participant", "lecture"), bob.join("hall", "participant", "lecture")]
        ids = {b.name: b.demo("participant") for b in (carol, alice, bob)}
        time.sleep(3)
        before_floor, _ = packets_per_mid(carol, 3)
        raised = alice.click("raise-hand")
        wait(lambda: carol.click("grant", ids["alice"]), 10)
        granted = wait(lambda: ids["alice"] in ((carol.demo("roster") or {}).get("floor", {}).get("approved_hands", [])), 10)
        time.sleep(1.5)
        with_floor, slots = packets_per_mid(carol, 3)
        at_bob, _ = packets_per_mid(bob, 1)
        r["lecture"] = {"joined": lecture, "before_floor": before_floor, "raised": raised, "granted": bool(granted),
                        "with_floor": with_floor, "slots": slots, "at_bob": at_bob}
        alice_mids = [m for m, p in slots.items() if p == ids["alice"]]
        checks["lecture mode: nobody is heard before the floor is granted, then only the floor holder"] = (
            all(lecture) and sum(before_floor.values()) <= 10 and raised and bool(granted)
            and sum(with_floor.get(m, 0) for m in alice_mids) > 50 and sum(at_bob.values()) > 15
            and sum(v for m, v in with_floor.items() if m not in alice_mids) <= 10)

        # Knock: who joins without the moderator key waits, and its page learns nothing of the room (no roster, no
        # talkers, no dominant speaker) until the moderator lets it in; then it gets the room.
        knocked = [carol.join("lobby", "moderator", knock=True), bob.join("lobby", "participant")]
        bob_id = bob.demo("participant")
        seen = wait(lambda: any(a["participant"] == bob_id for a in (carol.demo("roster") or {}).get("awaited_participants", [])), 10)
        time.sleep(2)
        waiting = {"awaited": bob.demo("awaited"), "roster": bob.demo("roster"), "talkers": bob.demo("talkers"), "dominant": bob.demo("dominant")}
        approved = carol.click("approve-all")
        let_in = wait(lambda: bob.demo("awaited") is False and len((bob.demo("roster") or {}).get("participants", [])) == 2, 10)
        r["knock"] = {"joined": knocked, "moderator_sees": bool(seen), "waiting": waiting, "approved": approved, "let_in": bool(let_in)}
        checks["knock: a participant waits knowing nothing of the room until the moderator lets it in"] = (
            all(knocked) and bool(seen) and waiting["awaited"] is True and waiting["roster"] is None and not waiting["talkers"]
            and waiting["dominant"] is None and approved and bool(let_in))
    finally:
        for b in (carol, alice, bob):
            b.close()
    print(json.dumps(r))
    for name, ok in checks.items():
        print(("ok   " if ok else "FAIL ") + name)
    failed = [n for n, ok in checks.items() if not ok]
    print(f"browser: {len(checks) - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed or not checks else 0)


if __name__ == "__main__":  # screen_share_test.py and codec_test.py import the helpers above
    main()
