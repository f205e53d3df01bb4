import json, socket, subprocess, time
proc = subprocess.Popen(["firefox-esr", "--headless", "--marionette", "--no-remote", "--profile", "/tmp/sdp/ffprofile"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def recv(sock):
    buf = b""
    while b":" not in buf: buf += sock.recv(1)
    n, rest = buf.split(b":", 1)
    n = int(n); data = rest
    while len(data) < n: data += sock.recv(n - len(data))
    return json.loads(data)
try:
    for _ in range(100):
        try: s = socket.create_connection(("127.0.0.1", 2828)); break
        except OSError: time.sleep(0.3)
    recv(s)  # handshake
    mid = [0]
    def cmd(name, params):
        mid[0] += 1
        msg = json.dumps([0, mid[0], name, params]).encode()
        s.sendall(str(len(msg)).encode() + b":" + msg)
        while True:
            r = recv(s)
            if r[0] == 1 and r[1] == mid[0]: return r
    cmd("WebDriver:NewSession", {"capabilities": {"alwaysMatch": {"acceptInsecureCerts": True}}})
    cmd("WebDriver:Navigate", {"url": "file:///tmp/sdp/offer.html"})
    for _ in range(100):
        r = cmd("WebDriver:ExecuteScript", {"script": "return document.getElementById('out').textContent", "args": []})
        t = (r[3] or {}).get("value") or ""
        if t.startswith("=====") or t.startswith("ERROR"): break
        time.sleep(0.2)
    print(t[:100])
    if t.startswith("====="):
        pub = t.split("=====PUBLISH\n")[1].split("=====SUBSCRIBE")[0]
        sub = t.split("=====SUBSCRIBE\n")[1].split("=====END")[0]
        open("firefox-publish.sdp", "w", newline="").write(pub)
        open("firefox-subscribe.sdp", "w", newline="").write(sub)
finally:
    proc.kill()
