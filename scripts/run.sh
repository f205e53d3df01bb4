#!/usr/bin/env bash
# The main job: installs what is needed, builds in release mode and runs the media node on its defaults
# (control API on 127.0.0.1:8080, media on UDP 127.0.0.1:10000 and up, one worker per core).
# Extra arguments go to `sfu serve` (e.g. --config sfu.toml, --set workers=2). `scripts/run.sh demo` runs the
# node with the example signaling server and its demo page instead (open http://127.0.0.1:8000/).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
source scripts/env.sh
swift build -c release --product sfu 2>&1 | grep -E "error:|warning: unre|Build of product" || true
if [ "${1:-}" = "demo" ]; then
  shift
  exec .build/release/sfu demo "$@"
fi
exec .build/release/sfu serve "$@"
