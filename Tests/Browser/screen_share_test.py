#!/usr/bin/env python3
"""Screen share in real browsers: three headless Chromium on the demo page (`sfu demo`), driven through the
DevTools protocol with the helpers of demo_test.py.

Run inside a private network namespace with `sfu demo` serving on 127.0.0.1:8000:
    python3 screen_share_test.py --alice alice.wav --bob bob.wav --silence silence.wav
Pat presents: the page's "Share screen" button calls getDisplayMedia, which Chromium's fake capture flags
(--use-fake-device-for-media-stream with --use-fake-ui-for-media-stream, which demo_test.py's browsers already
get) answer with an animated fake monitor: the page's real path, no replaced function. Alice and Bob talk in
turns that the test gives with each page's microphone switch (`demo.setMicrophone`): Alice first, then Bob. Every page
receives one talker of each kind and its screen slot. Checked while the dominant speaker moves from Alice to
Bob: the others' screen slots name Pat with source screen and decode the share at its captured size without a
pause, while the camera and audio slots follow the talkers (a camera that a viewer's number_of_videos does not
yet take beside the share stays empty: ABWD gives the share the first video). Then Pat stops sharing and the slots empty, Pat
shares again and they fill again, and a page without getDisplayMedia disables its button.
"""
import argparse, json, shutil, sys, tempfile, time

sys.dont_write_bytecode = True  # importing demo_test must leave no __pycache__ in the source tree
from demo_test import Browser, wait  # noqa: E402

# How long a turn may take to show: the dominant speaker and the slots move within a few seconds of a turn.
TURN_LIMIT_SECONDS = 20
# How long each turn is held once seen: the share is sampled through both turns, 10 s or more in all.
TURN_HOLD_SECONDS = 5
SAMPLE_SECONDS = 0.5
# A stall: a screen slot whose decoded frame count does not grow for this long. The page reads its stats once a
# second, so a slot that decodes all the time shows a new count at about every second reading.
STALL_SECONDS = 2.5


def slot_of(browser, kind, who):
    """The mid of a talker slot of `kind` that the page's slot map gives `who`, if any."""
    kinds, slots = browser.demo("kinds") or {}, browser.demo("slots") or {}
    return next((m for m, p in slots.items() if p == who and kinds.get(m) == kind), None)


def longest_pause(samples):
    """The longest time in `samples` ([(seconds, frames decoded)]) that the frame count did not grow."""
    longest, since = 0.0, samples[0][0]
    for (t0, f0), (t1, f1) in zip(samples, samples[1:]):
        if f1 > f0:
            longest, since = max(longest, t1 - since), t1
    return max(longest, samples[-1][0] - since)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--alice", required=True, help="Alice's microphone: speech all through")
    ap.add_argument("--bob", required=True, help="Bob's microphone: speech all through (off until his turn)")
    ap.add_argument("--silence", required=True)
    args = ap.parse_args()
    checks, r = {}, {}
    work = tempfile.mkdtemp()
    pat = Browser("pat", 9311, args.silence, work)
    alice = Browser("alice", 9312, args.alice, work)
    bob = Browser("bob", 9313, args.bob, work)
    viewers = (alice, bob)
    try:
        joined = [b.join("screens", "participant") for b in (pat, alice, bob)]
        ids = {b.name: b.demo("participant") for b in (pat, alice, bob)}
        # One talker slot of each kind per page, so that the camera and audio slots must move between talkers.
        # Bob's microphone stays off until his turn; Alice talks from the start.
        microphones = {"bob off": bob.eval("demo.setMicrophone(false)")}
        one_talker = [b.eval("demo.setTalkers(1)") or {} for b in (pat, alice, bob)]
        screen_slots = [b.demo("screenSlot") or {} for b in (pat, alice, bob)]
        r["ids"], r["one_talker"], r["screen_slots"] = ids, one_talker, screen_slots
        checks["three pages join with one talker slot of each kind and a screen slot each"] = (
            all(joined) and microphones["bob off"] is True and all(t.get("change") == "renegotiated" for t in one_talker)
            and all(s.get("mid") is not None for s in screen_slots))

        # Pat shares a screen with the page's button: a second video on the same publishing connection.
        clicked = pat.click("share-screen")
        sharing = wait(lambda: (pat.demo("screenShare") or {}).get("width") and pat.demo("changes")["publish"][-1:] == ["renegotiated"], 10)
        share = pat.demo("screenShare") or {}
        def shown_to_viewers():
            slots = [v.demo("screenSlot") or {} for v in viewers]
            return all(s.get("participant") == ids["pat"] and s.get("source") == "screen" and s.get("frames", 0) > 10
                       and [s.get("frameWidth"), s.get("frameHeight")] == [share.get("width"), share.get("height")] for s in slots)
        shown = wait(shown_to_viewers, 15)
        labels = [v.eval("(document.querySelector('#screen-slot:not([hidden]) .label') || {}).textContent || null") for v in viewers]
        roster = {p["participant"]: p["publishes"] for p in (alice.demo("roster") or {}).get("participants", [])}
        r["share"] = {"clicked": clicked, "share": share, "labels": labels, "mid": pat.eval("screenShare.sending && screenShare.sending.mid"),
                      "changes": pat.demo("changes")["publish"], "roster": roster,
                      "viewers": [v.demo("screenSlot") for v in viewers], "own_slot": pat.demo("screenSlot")}
        checks["a shared screen goes out on the same publishing connection; the others decode it at its size in a tile "
               "labelled with Pat, whose own screen slot stays empty"] = (
            clicked and bool(sharing) and pat.demo("changes")["publish"] == ["created", "renegotiated"] and bool(shown)
            and labels == ["Pat's screen"] * 2
            and roster.get(ids["pat"], {}).get("screen") is True and (pat.demo("screenSlot") or {}).get("participant") is None)

        # Through Alice's turn and Bob's: the camera and audio slots follow the talkers, the screen slots keep
        # Pat's share and keep decoding. The test gives the turns (each page's own microphone switch), so a
        # turn cannot be over before the share is up, however long a loaded machine takes to get there.
        samples = []
        started = time.monotonic()

        def camera(watcher, who):
            """How `watcher`'s talker camera slot stands for talker `who`: "shown" when it shows them; "held back"
            when it shows no camera while its screen slot shows Pat's share and its number_of_videos (ABWD; 1
            before the node's first alert) is below 2 - the node gives the share the one video an estimate still
            climbing after the share began allows, and the camera follows once the estimate takes two. Pat, who
            is not shown his own share, must show the camera. Else None."""
            if slot_of(watcher, "video", who):
                return "shown"
            kinds, slots = watcher.demo("kinds") or {}, watcher.demo("slots") or {}
            cameras = [m for m, k in kinds.items() if k == "video"]
            shares = (watcher.demo("screenSlot") or {}).get("participant") == ids["pat"]
            empty = bool(cameras) and all(slots.get(m) is None for m in cameras)
            return "held back" if empty and shares and (watcher.demo("numberOfVideos") or 1) < 2 else None

        def turn(talker, watchers, hold, limit):
            """Samples the screen slots until both `watchers` name `talker` dominant speaker, the first gives it
            its audio slot and each its camera slot (or holds the camera back for the share, see `camera`), without
            a break for `hold` seconds; what was seen, or the last look when that never happened."""
            who, since, last, seen = ids[talker.name], time.monotonic(), {}, {}
            while time.monotonic() - since < limit:
                now = time.monotonic() - started
                samples.append((now, [v.demo("screenSlot") or {} for v in viewers]))
                last = {w.name: {"dominant": w.demo("dominant"), "slots": w.demo("slots"), "camera": camera(w, who),
                                 "number_of_videos": w.demo("numberOfVideos")} for w in watchers}
                if all(last[w.name]["dominant"] == who and last[w.name]["camera"] for w in watchers) \
                        and slot_of(watchers[0], "audio", who):
                    seen.setdefault("at", round(now, 1))
                    seen.update({w.name: last[w.name] for w in watchers})
                    if now - seen["at"] >= hold:
                        return seen
                else:
                    seen = {}  # the hold starts again
                time.sleep(SAMPLE_SECONDS)
            return {"not_seen": last}

        turns = {"alice": turn(alice, (pat, bob), TURN_HOLD_SECONDS, TURN_LIMIT_SECONDS)}
        alice_seen = {} if "not_seen" in turns["alice"] else turns["alice"]
        microphones["alice off, bob on"] = [alice.eval("demo.setMicrophone(false)"), bob.eval("demo.setMicrophone(true)")]
        turns["bob"] = turn(bob, (pat, alice), TURN_HOLD_SECONDS, TURN_LIMIT_SECONDS) if alice_seen else {}
        bob_seen = {} if "not_seen" in turns["bob"] else turns["bob"]
        kept = all(s.get("participant") == ids["pat"] and s.get("source") == "screen" and s.get("frameWidth") == share.get("width")
                   for _, views in samples for s in views)
        def change(field):  # per viewer, from the first sample to the last
            return [(samples[-1][1][i].get(field) or 0) - (samples[0][1][i].get(field) or 0) for i in range(len(viewers))]
        pauses = [round(longest_pause([(t, views[i].get("frames", 0)) for t, views in samples]), 1) for i in range(len(viewers))]
        decoded, restarts = change("frames"), [k + p for k, p in zip(change("keyFrames"), change("pictureLossRequests"))]
        r["turns"] = {**turns, "microphones": microphones, "samples": len(samples), "seconds": round(samples[-1][0] - samples[0][0], 1),
                      "frames_decoded": decoded, "longest_pause": pauses, "key_frames_and_plis": restarts,
                      "freezes": change("freezes"), "freeze_seconds": [round(f, 3) for f in change("freezeSeconds")],
                      "camera_frames_at_pat": pat.demo("videoFrames")}
        checks["the camera and audio slots follow the talkers from Alice to Bob"] = (
            bool(alice_seen) and bool(bob_seen) and microphones["alice off, bob on"] == [True, True])
        checks["the screen slots show Pat's share, source screen, at its width, all through the speaker change"] = (
            bool(alice_seen) and bool(bob_seen) and len(samples) > 10 and kept)
        # Frames keep decoding, and the decoders never had to start again: a share the node held back, cut or
        # moved would need a key frame (asked for with a PLI). Chromium's own freezeCount (a frame shown 150 ms
        # later than the recent pace) is reported, not checked: on this shared machine the presenter's capture
        # skips 150-450 ms now and then under load, and both viewers then count the same freeze.
        checks["the share decodes without a freeze through the speaker change"] = (
            bool(bob_seen) and all(p < STALL_SECONDS for p in pauses) and all(d > 0 for d in decoded) and restarts == [0, 0]
            and all(isinstance(s.get("keyFrames"), int) and isinstance(s.get("pictureLossRequests"), int) for s in samples[-1][1]))

        # Pat stops: the publishing connection is renegotiated without the share, the screen slots empty and
        # decode nothing more.
        stopped = pat.click("share-screen")
        renegotiated = wait(lambda: pat.demo("changes")["publish"] == ["created", "renegotiated", "renegotiated"], 10)
        emptied = wait(lambda: all((v.demo("screenSlot") or {}).get("participant") is None for v in viewers), 10)
        time.sleep(1)  # frames already in the jitter buffer
        before = [(v.demo("screenSlot") or {}).get("frames", 0) for v in viewers]
        time.sleep(2)
        after = [(v.demo("screenSlot") or {}).get("frames", 0) for v in viewers]
        roster = {p["participant"]: p["publishes"] for p in (alice.demo("roster") or {}).get("participants", [])}
        r["stop"] = {"clicked": stopped, "changes": pat.demo("changes")["publish"], "emptied": bool(emptied),
                     "frames": [before, after], "roster": roster, "viewers": [v.demo("screenSlot") for v in viewers],
                     "button": pat.eval("document.querySelector('#share-screen').textContent")}
        checks["stopping the share empties the screen slots and no more frames decode there"] = (
            bool(shown) and stopped and bool(renegotiated) and bool(emptied) and before == after
            and roster.get(ids["pat"], {}).get("screen") is False and roster.get(ids["pat"], {}).get("video") is True)

        # Sharing again: the stopped m-line's place in the offer is reused under a new mid, which the page names.
        # The new track starts the viewers' decoders again, from a key frame.
        key_frames = [(v.demo("screenSlot") or {}).get("keyFrames") or 0 for v in viewers]
        again = pat.click("share-screen")
        refilled = wait(lambda: all((v.demo("screenSlot") or {}).get("participant") == ids["pat"]
                                    and (v.demo("screenSlot") or {}).get("frames", 0) > frames + 10 for v, frames in zip(viewers, after)), 15)
        r["again"] = {"clicked": again, "mids": [r["share"]["mid"], pat.eval("screenShare.sending && screenShare.sending.mid")],
                      "changes": pat.demo("changes")["publish"], "viewers": [v.demo("screenSlot") for v in viewers]}
        key_frames_again = [(v.demo("screenSlot") or {}).get("keyFrames") or 0 for v in viewers]
        r["again"]["key_frames"] = [key_frames, key_frames_again]
        checks["sharing again after stopping fills the screen slots again, from a key frame"] = (
            again and bool(refilled) and pat.demo("changes")["publish"][3:] == ["renegotiated"]
            and all(b > a for a, b in zip(key_frames, key_frames_again)))

        # A browser without getDisplayMedia: the button is disabled and says why; an attempt sends no offer.
        fallback = alice.eval("""(async () => {
            delete MediaDevices.prototype.getDisplayMedia;
            render();
            await startScreenShare();
            const button = document.querySelector('#share-screen');
            return { disabled: button.disabled, title: button.title, error: demo.screenShare.error, offers: demo.changes.publish.length };
        })()""") or {}
        r["fallback"] = fallback
        checks["without getDisplayMedia the page disables sharing and says why"] = (
            fallback.get("disabled") is True and "cannot share" in (fallback.get("error") or "") and fallback.get("offers") == 1)
    finally:
        for b in (pat, alice, bob):
            b.close()
            b.proc.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(r))
    for name, ok in checks.items():
        print(("ok   " if ok else "FAIL ") + name)
    failed = [n for n, ok in checks.items() if not ok]
    print(f"screen share: {len(checks) - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed or not checks else 0)


if __name__ == "__main__":
    main()
