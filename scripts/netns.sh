# Sourced by the real-peer tests: a private network namespace with no route out, the Python venv of the test
# peers, and waiting for a server inside the namespace.

# The venv with aiortc (real WebRTC peer), websockets (events consumer) and websocket-client (DevTools).
peer_venv() {
  venv=.venv-interop
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import aiortc, websockets, websocket" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --only-binary=:all: aiortc websockets websocket-client
  fi
}

# Creates namespace $1 with loopback up; on exit kills what runs in it, deletes it and the folder $2.
private_netns() {
  ns=$1
  netns_work=$2
  ip netns add "$ns"
  trap 'ip netns pids "$ns" 2>/dev/null | xargs -r kill -TERM 2>/dev/null || true; sleep 1;
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true;
        ip netns del "$ns" 2>/dev/null || true; rm -rf "$netns_work"' EXIT
  ip netns exec "$ns" ip link set lo up
}

# Waits up to 10 s for URL $1 to answer inside the namespace.
wait_in_netns() {
  for _ in $(seq 1 50); do
    ip netns exec "$ns" curl -sf "$1" > /dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "!! nothing answered $1 inside $ns within 10 s" >&2
  return 1
}
