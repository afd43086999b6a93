#!/usr/bin/env bash
# Per-request latency of `hearth serve` over keep-alive (issue #22 item 1; manual, not
# part of `make test`): stories260K on loopback, one client, requests sent one after
# another on one connection (Python's http.client, then the official openai SDK).
# Prints a JSON line per kind: a 1-token completion, and an exact cache hit (the same
# chat prompt again: its prompt is restored, one token is generated), p50/p99/max in
# milliseconds. With `curl` it also prints the two
# time_total figures of two requests on one reused connection (`--next`).
#
# Usage: scripts/latency.sh [requests=200]
# Env:   HEARTH_LATENCY_MODEL  GGUF to serve (default $HEARTH_SHARED_DIR/models/stories260K.gguf)
set -euo pipefail
cd "$(dirname "$0")/.."

requests=${1:-200}
model=${HEARTH_LATENCY_MODEL:-${HEARTH_SHARED_DIR:-../shared}/models/stories260K.gguf}
[[ -x ${HEARTH:-./build/hearth} ]] || { echo "latency: build/hearth is missing; run 'make build'" >&2; exit 2; }
[[ -s $model ]] || { echo "latency: $model is missing" >&2; exit 2; }

source scripts/serve-lib.sh
serve_scratch latency
# Short prompts must be cacheable for the exact-hit case.
cat >"$work/latency.toml" <<TOML
[[models]]
id = "m"
path = "$model"
n_seq_max = 1
policy = { min_tokens = 8, cold_min_tokens = 8, boundary_trim_tokens = 0, boundary_align_tokens = 8 }
TOML
serve_start "$work/latency.toml"
echo "latency: $(date -u +%FT%TZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
python3 scripts/latency_driver.py "$url" "$requests"
# The same through the official openai SDK (pinned in tests/server/node, installed by its
# setup script like the SDK tests); skipped with a note when node/npm are missing.
if bash tests/server/node/setup.sh ./build/node-tests >/dev/null 2>&1; then
  node ./build/node-tests/latency_sdk.mjs "$url" "$requests"
else
  echo "latency: the openai SDK is not installed (tests/server/node/setup.sh failed); SDK figures skipped"
fi
body='{"prompt":"Once upon a time","max_tokens":1}'
echo -n "curl, two requests on one connection, time_total: "
curl -s -o /dev/null -w '%{time_total} ' "$url/v1/completions" -H 'Content-Type: application/json' \
  -d "$body" --next -s -o /dev/null -w '%{time_total}\n' "$url/v1/completions" \
  -H 'Content-Type: application/json' -d "$body"
