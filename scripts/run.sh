#!/usr/bin/env bash
# The main job: installs what is needed, builds in release mode and runs the media node on its defaults
# (control API on 127.0.0.1:8080, media on UDP 127.0.0.1:10000 and up, one worker per core).
# Extra arguments go to `sfu serve` (e.g. --config sfu.toml, --set workers=2). `scripts/run.sh demo` runs the
# node with the example signaling server and its demo page instead (open http://127.0.0.1:8000/).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
scripts/install-deps.sh
if [ "${1:-}" = "demo" ]; then
  shift
  build_sfu release sfu sfu-lab
  exec "$sfu" demo "$@"
fi
build_sfu release sfu
exec "$sfu" serve "$@"
