# The helpers every script shares (sourced; defines functions, runs nothing). Scripts start with:
#   cd "$(dirname "$0")/.." && source scripts/lib.sh

# Builds products $2... (default: the node `sfu` and its tools `sfu-lab`) in configuration $1 (debug by
# default) on libsrtp2 built on OpenSSL (SFU_SRTP=debian keeps Debian's NSS one), and sets $sfu to the node
# binary. A failed build stops the script with the compiler's errors: a stale binary is never tested.
build_sfu() {
  local config=${1:-debug} log product
  shift || true
  [ $# -gt 0 ] || set -- sfu sfu-lab
  use_libsrtp
  log=$(mktemp)
  for product in "$@"; do
    if ! swift build -c "$config" --product "$product" >> "$log" 2>&1; then
      grep -E "error:" "$log" | head -30 >&2
      echo "!! swift build -c $config --product $product failed; full log: $log" >&2
      exit 1
    fi
  done
  rm -f "$log"
  sfu=.build/$config/sfu
}

# Points pkg-config at libsrtp2 on OpenSSL, building it once (scripts/build-libsrtp.sh), unless SFU_SRTP=debian.
use_libsrtp() {
  if [ "${SFU_SRTP:-openssl}" = "openssl" ]; then scripts/build-libsrtp.sh > /dev/null; fi
  source scripts/env.sh
}

# Writes espeak-ng's reading of $2 to $1 as 48 kHz mono (what the clients' Opus encoders take).
speech() {
  local raw
  raw=$(mktemp --suffix=.wav)
  espeak-ng -w "$raw" "$2"
  sox "$raw" -r 48000 -c 1 "$1"
  rm -f "$raw"
}

# Writes $2 seconds of 48 kHz mono silence to $1.
silence() { sox -n -r 48000 -c 1 "$1" trim 0 "$2"; }

# Waits up to ${2:-10} seconds for URL $1 to answer (inside namespace $ns when private_netns made one).
wait_for_url() {
  local tries=$(( ${2:-10} * 5 )) run=()
  [ -n "${ns:-}" ] && run=(ip netns exec "$ns")
  for _ in $(seq 1 "$tries"); do
    "${run[@]}" curl -sf "$1" > /dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "!! nothing answered $1 within ${2:-10} s${ns:+ inside $ns}" >&2
  return 1
}

# The venv with aiortc (real WebRTC peer), websockets (events consumer) and websocket-client (DevTools);
# sets $venv.
peer_venv() {
  venv=.venv-interop
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import aiortc, websockets, websocket" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --only-binary=:all: aiortc websockets websocket-client
  fi
}

# Creates network namespace $1 with loopback up and no route out, and sets $ns; on exit kills what runs in
# it, deletes it and the folder $2.
private_netns() {
  ns=$1
  netns_work=$2
  ip netns add "$ns"
  trap 'ip netns pids "$ns" 2>/dev/null | xargs -r kill -TERM 2>/dev/null || true; sleep 1;
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true;
        ip netns del "$ns" 2>/dev/null || true; rm -rf "$netns_work"' EXIT
  ip netns exec "$ns" ip link set lo up
}
