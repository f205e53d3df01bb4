# The helpers every script shares (sourced; defines functions, runs nothing). Scripts start with:
#   cd "$(dirname "$0")/.." && source scripts/lib.sh

# Builds products $2... (default: the node `sfu` and its tools `sfu-lab`) in configuration $1 (debug by
# default) on libsrtp2 built on OpenSSL (SFU_SRTP=debian keeps Debian's NSS one), and sets $sfu to the node
# binary. Shows how far the build is (`build_progress`). A failed build stops the script with the compiler's
# errors: a stale binary is never tested.
build_sfu() {
  local config=${1:-debug} log product status
  shift || true
  [ $# -gt 0 ] || set -- sfu sfu-lab
  use_libsrtp
  log=$(mktemp)
  for product in "$@"; do
    set +e
    swift build -c "$config" --product "$product" 2>&1 | tee -a "$log" | build_progress "$product ($config)"
    status=${PIPESTATUS[0]}
    set -e
    if [ "$status" -ne 0 ]; then
      grep -E "error:" "$log" | head -30 >&2
      echo "!! swift build -c $config --product $product failed; full log: $log" >&2
      exit 1
    fi
  done
  rm -f "$log"
  sfu=.build/$config/sfu
}

# Reads SwiftPM's output on standard input and says on standard error how far the build of $1 is: on a terminal
# one line kept up to date (steps done of all, the module being compiled, minutes so far); elsewhere (CI, a log)
# a line at each tenth of the steps. Nothing when everything was built already.
build_progress() {
  local what=$1 line done=0 total=0 module="" tenth=-1 start=$SECONDS tty=0
  [ -t 2 ] && tty=1
  while IFS= read -r line; do
    if [[ $line =~ ^\[([0-9]+)/([0-9]+)\]\ (Compiling|Emitting\ module|Linking|Building)\ ([^ ]+) ]]; then
      done=${BASH_REMATCH[1]}
      # SwiftPM plans first ([1/1]), then counts the build's own steps: a new total starts the tenths again.
      [ "${BASH_REMATCH[2]}" = "$total" ] || tenth=-1
      total=${BASH_REMATCH[2]}
      module=${BASH_REMATCH[4]}
      if [ "$tty" -eq 1 ]; then
        printf '\r\033[Kbuilding %s: %d of %d steps (%d%%), %s, %d:%02d' "$what" "$done" "$total" $((done * 100 / total)) "$module" \
          $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) >&2
      elif [ $((done * 10 / total)) -gt "$tenth" ]; then
        tenth=$((done * 10 / total))
        printf 'building %s: %d of %d steps (%d%%), %d:%02d\n' "$what" "$done" "$total" $((done * 100 / total)) \
          $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) >&2
      fi
    fi
  done
  if [ "$total" -gt 0 ]; then
    [ "$tty" -eq 1 ] && printf '\r\033[K' >&2
    printf 'built %s in %d:%02d\n' "$what" $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) >&2
  fi
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
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import aiortc, websockets, websocket, numpy" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --only-binary=:all: aiortc websockets websocket-client numpy
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

# A star of network namespaces: $1-$2 holds a bridge br0 at $3.1/24; each further name n gets namespace $1-n
# with one end of a veth (eth0) at $3.11, $3.12, ... in order, the other end (v-n) a port of the bridge.
# Nothing is routed anywhere else. The caller deletes them (each script's cleanup knows its names).
bridged_netns() {
  local prefix=$1 hub=$1-$2 subnet=$3 i=10 n
  shift 3
  ip netns add "$hub"
  ip -n "$hub" link set lo up
  ip -n "$hub" link add br0 type bridge
  ip -n "$hub" addr add "$subnet.1/24" dev br0
  ip -n "$hub" link set br0 up
  for n in "$@"; do
    i=$((i + 1))
    ip netns add "$prefix-$n"
    ip -n "$prefix-$n" link set lo up
    ip -n "$hub" link add "v-$n" type veth peer name eth0 netns "$prefix-$n"
    ip -n "$hub" link set "v-$n" master br0
    ip -n "$hub" link set "v-$n" up
    ip -n "$prefix-$n" addr add "$subnet.$i/24" dev eth0
    ip -n "$prefix-$n" link set eth0 up
  done
}
