#!/usr/bin/env bash
# The main job: installs what is needed, builds in release mode and runs the media node on its defaults
# (control API on 127.0.0.1:8080, media on UDP 127.0.0.1:10000 and up, one worker per core).
# Extra arguments go to `sfu serve` (e.g. --config sfu.toml, --set workers=2). Any other command runs instead,
# with the tools' binary (sfu-lab) built beside sfu: `scripts/run.sh demo` runs the node with the example
# signaling server and its demo page (open http://127.0.0.1:8000/), `scripts/run.sh compose manifest.json -o
# call.mp4` composes a recording, and so on for every tool (`sfu --help` lists them). After that the same
# commands run as `.build/release/sfu <command>`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
scripts/install-deps.sh
case "${1:-serve}" in
  serve | -*)
    [ "${1:-}" = serve ] && shift
    build_sfu release sfu
    exec "$sfu" serve "$@"
    ;;
  *)
    build_sfu release sfu sfu-lab
    exec "$sfu" "$@"
    ;;
esac
