"""Serves one HTML page to the test's browsers: the shaped-link and codec tests each drive Chromium through a
page of their own (its RTCPeerConnections talk to the node's API through the test, not a signaling server)."""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve_page(html, host, port):
    """Starts a background server answering every GET with `html`; returns it (its threads die with the test)."""
    body = html.encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
