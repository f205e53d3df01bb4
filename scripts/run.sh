#!/usr/bin/env bash
# The main job: installs what is needed, builds in release mode and runs the engine's room scenario.
# (The media node, `sfu serve`, replaces this once it exists.) Extra arguments go to `sfu scenario`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build -c release --product sfu 2>&1 | grep -E "error|warning: unre|Build complete" || true
exec .build/release/sfu scenario "$@"
