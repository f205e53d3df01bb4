#!/usr/bin/env bash
# Property-based fuzzing of the control API against its own document (docs/openapi.yaml) with schemathesis
# (PyPI): every request the document forbids must be refused with a 4xx, no request may cause a 5xx, and
# every response must match the documented status codes, content types and schemas.
# Not checked here: that every schema-valid request is accepted (SDP content, "exactly one of", the roles of
# `by` are semantic checks the schema cannot express), the stateful phase (it treats an unknown participant in
# a created room as a missing resource), 405 for undeclared methods (unknown methods answer 404 6011), and
# /v1/events (a WebSocket; tested in Tests/SFUNodeTests/LiveAPITests.swift).
# Usage: scripts/api-fuzz.sh [path to the sfu binary]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
if [ $# -ge 1 ]; then sfu=$1; else build_sfu debug; fi
venv=.venv-schemathesis
if [ ! -x "$venv/bin/st" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q schemathesis==4.32.*
fi
port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
log=$(mktemp)
"$sfu" serve --set "api.listen=127.0.0.1:$port" --set media.listen=127.0.0.1:0 --set workers=1 --set log.level=error > "$log" 2>&1 &
node=$!
trap 'kill $node 2>/dev/null || true; rm -f "$log"' EXIT
wait_for_url "http://127.0.0.1:$port/healthz"
echo "== schemathesis against docs/openapi.yaml"
"$venv/bin/st" run docs/openapi.yaml --url "http://127.0.0.1:$port" --max-examples 40 --phases examples,coverage,fuzzing \
  --exclude-path /v1/events --exclude-checks positive_data_acceptance,unsupported_method --seed 1 --no-color
kill -0 $node || { echo "the node died during API fuzzing:"; cat "$log"; exit 1; }
