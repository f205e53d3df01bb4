import json, subprocess, time, urllib.request, websocket
proc = subprocess.Popen(["/usr/lib/chromium/chromium", "--headless=new", "--no-sandbox", "--use-fake-device-for-media-stream",
    "--use-fake-ui-for-media-stream", "--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns",
    "--remote-debugging-port=9333", "--user-data-dir=/tmp/sdp/profile", "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for _ in range(50):
        try:
            targets = json.load(urllib.request.urlopen("http://127.0.0.1:9333/json")); break
        except Exception: time.sleep(0.2)
    page = [t for t in targets if t["type"] == "page"][0]
    ws = websocket.create_connection(page["webSocketDebuggerUrl"], suppress_origin=True)
    mid = [0]
    def call(method, **params):
        mid[0] += 1
        ws.send(json.dumps({"id": mid[0], "method": method, "params": params}))
        while True:
            m = json.loads(ws.recv())
            if m.get("id") == mid[0]: return m
    call("Page.navigate", url="file:///tmp/sdp/offer.html")
    for _ in range(100):
        r = call("Runtime.evaluate", expression="document.getElementById('out') && document.getElementById('out').textContent")
        t = r["result"]["result"].get("value") or ""
        if t.startswith("=====") or t.startswith("ERROR"): break
        time.sleep(0.2)
    print(t[:120])
    if t.startswith("====="):
        pub = t.split("=====PUBLISH\n")[1].split("=====SUBSCRIBE")[0]
        sub = t.split("=====SUBSCRIBE\n")[1].split("=====END")[0]
        open("chrome-publish.sdp", "w", newline="").write(pub)
        open("chrome-subscribe.sdp", "w", newline="").write(sub)
finally:
    proc.kill()
