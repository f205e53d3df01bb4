"""Headless Firefox ESR in a network namespace of its own, driven through WebDriver BiDi, with the same calls
as the tests' Chromium (`eval`, `open`, `stats`, `close`).

Firefox's remote agent listens on the loopback of the browser's own namespace, out of the test's reach, and
has no pipe mode: a small relay started in that namespace connects to it and carries the bytes over a socket
pair whose other end is the test's WebSocket. The profile's prefs give Firefox a fake camera and microphone
without asking, getUserMedia on the test's plain-http origin, real host candidates (no mDNS names) and nothing
that phones home (the namespace has no route out anyway)."""
import json, os, socket, subprocess, sys, threading, time

import websocket

FIREFOX = "firefox-esr"
PORT = 9222

PREFS = {
    "media.navigator.streams.fake": True,
    "media.navigator.permission.disabled": True,
    "media.devices.insecure.enabled": True,
    "media.getusermedia.insecure.enabled": True,
    "media.peerconnection.ice.obfuscate_host_addresses": False,
    "media.autoplay.default": 0,
    "media.autoplay.blocking_policy": 0,
    "browser.shell.checkDefaultBrowser": False,
    "app.update.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "remote.active-protocols": 1,
}

# Runs in the browser's namespace: waits for the remote agent's port, then copies bytes both ways between it
# and the socket on fd 0 until either side closes.
RELAY = r"""
import os, select, socket, sys, time
for _ in range(300):
    try:
        tcp = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit(1)
pipe = socket.socket(fileno=0)
while True:
    ready, _, _ = select.select([pipe, tcp], [], [])
    for s in ready:
        data = s.recv(65536)
        if not data:
            sys.exit(0)
        (tcp if s is pipe else pipe).sendall(data)
"""


class Firefox:
    def __init__(self, name, netns, origin, profile_root, log_dir=None):
        self.name = name
        profile = os.path.join(profile_root, name)
        os.makedirs(profile, exist_ok=True)
        with open(os.path.join(profile, "user.js"), "w") as f:
            for k, v in PREFS.items():
                f.write(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n")
        log = open(os.path.join(log_dir or profile_root, f"{name}-firefox.log"), "w")
        self.proc = subprocess.Popen(["ip", "netns", "exec", netns, FIREFOX, "--headless", "--no-remote", "--profile", profile,
                                      "--remote-debugging-port", str(PORT), "about:blank"],
                                     stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "MOZ_HEADLESS": "1"})
        mine, theirs = socket.socketpair()
        self.relay = subprocess.Popen(["ip", "netns", "exec", netns, sys.executable, "-c", RELAY, str(PORT)], stdin=theirs)
        theirs.close()
        self.ws = websocket.create_connection(f"ws://127.0.0.1:{PORT}/session", socket=mine, suppress_origin=True, timeout=60)
        self.next_id = 0
        self.lock = threading.Lock()
        self.call("session.new", capabilities={})
        tree = self.call("browsingContext.getTree")
        self.context = tree["contexts"][0]["context"]

    def call(self, method, **params):
        """One command; returns its result, raising its error. Events in between are skipped."""
        with self.lock:
            self.next_id += 1
            i = self.next_id
            self.ws.send(json.dumps({"id": i, "method": method, "params": params}))
            while True:
                msg = json.loads(self.ws.recv())
                if msg.get("id") != i:
                    continue
                if msg.get("type") == "error":
                    raise RuntimeError(f"{self.name}: {method}: {msg.get('error')}: {msg.get('message')}")
                return msg.get("result", {})

    def eval(self, expression, timeout=30):
        """The expression's value, awaited, as JSON (what Chromium's returnByValue gives the tests)."""
        wrapped = f"(async () => JSON.stringify(await ({expression})))()"
        r = self.call("script.evaluate", expression=wrapped, target={"context": self.context}, awaitPromise=True,
                      resultOwnership="none")
        if r.get("type") == "exception":
            raise RuntimeError(f"{self.name}: {expression[:60]}: {r.get('exceptionDetails', {}).get('text')}")
        value = r.get("result", {}).get("value")
        return json.loads(value) if isinstance(value, str) else None

    def open(self, url):
        self.call("browsingContext.navigate", context=self.context, url=url, wait="complete")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.eval("typeof window.t === 'object' && document.readyState === 'complete'"):
                return
            time.sleep(0.2)
        raise RuntimeError(f"{self.name}: the page did not load")

    def stats(self):
        return self.eval("t.stats()")

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        for p in (self.relay, self.proc):
            p.kill()
            p.wait()
