#!/usr/bin/env bash
# Load test of `hearth serve` (manual; not part of `make test`). Generates a small
# gen-model model once into ./data, starts build/hearth serve on it, drives it with N
# concurrent streaming chat clients (the official openai SDK, pinned by
# tests/server/node/package-lock.json) for D seconds, then stops the server with
# SIGTERM. Prints requests, errors, p50/p99 time to first token and the server's RSS
# at start, after the warm-up, at most after it and at the end.
#
# Usage: scripts/load-test.sh [seconds=120] [clients=32]
# Env:   HEARTH_LOAD_PRESET   gen-model preset, tiny | small (default small)
#        HEARTH_LOAD_TYPE     weight type (default f32)
#        HEARTH_LOAD_N_SEQ    sequences batched together (default 8)
#        HEARTH_LOAD_RAM_QUOTA  RAM cache tier quota (default 64MiB: the cache fills
#                             it during the warm-up, then evicts, so RSS must level off)
#        HEARTH_LOAD_WARMUP_S seconds before the "after warm-up" RSS sample (default 20)
#        HEARTH_LOAD_MAX_RSS_GROWTH_PCT  allowed RSS growth from after the warm-up to
#                             the end (default 25)
#        HEARTH_LOAD_CANCEL_EVERY   every Nth request of a client cancels its stream
#        HEARTH_LOAD_RESTART_EVERY_S  unload + reload the model every S seconds
#        (scripts/soak.sh sets both: the 30-minute soak)
# Exit status: 0 only with zero request errors, RSS growth within the bound, and a
# clean (exit 0) server shutdown.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-120}
clients=${2:-32}
preset=${HEARTH_LOAD_PRESET:-small}
wtype=${HEARTH_LOAD_TYPE:-f32}
n_seq=${HEARTH_LOAD_N_SEQ:-8}
ram_quota=${HEARTH_LOAD_RAM_QUOTA:-64MiB}
warmup=${HEARTH_LOAD_WARMUP_S:-20}
max_growth=${HEARTH_LOAD_MAX_RSS_GROWTH_PCT:-25}
HEARTH=./build/hearth
NODE_DIR=./build/node-tests

if [[ ! -x $HEARTH ]]; then
  echo "load-test: $HEARTH is missing; run 'make build' first" >&2
  exit 2
fi
bash tests/server/node/setup.sh "$NODE_DIR" >/dev/null

mkdir -p data
model=data/load-$preset-$wtype.gguf
if [[ ! -s $model ]]; then
  echo "load-test: generating $model (gen-model --preset $preset --type $wtype)"
  "$HEARTH" gen-model --preset "$preset" --type "$wtype" --seed 1 --out "$model.tmp" >/dev/null
  mv "$model.tmp" "$model"
fi

source scripts/serve-lib.sh
serve_scratch load

# Short chats must be cacheable (the default policy saves from 512 tokens), so the
# cache works and fills its RAM quota under load: that is what makes RSS interesting.
cat >"$work/load.toml" <<TOML
[limits]
max_queued_requests = 64

[tiers.ram]
quota = "$ram_quota"

[[models]]
id = "load"
path = "$PWD/$model"
n_seq_max = $n_seq
policy = { min_tokens = 32, cold_min_tokens = 32, boundary_trim_tokens = 0, boundary_align_tokens = 32, continued_interval = 128 }
TOML

serve_start "$work/load.toml" --models-dir "$PWD/data"

echo "load-test: $(date -u +%FT%TZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "load-test: $model served at $url (n_seq_max $n_seq, RAM tier $ram_quota);" \
  "$clients streaming clients for ${seconds}s, warm-up ${warmup}s"
set +e
HEARTH_LOAD_MODEL_PATH="$PWD/$model" \
  node "$NODE_DIR/load_test.mjs" "$url" load "$clients" "$seconds" "$server_pid" "$warmup" \
  | tee "$work/result.json"
client_rc=${PIPESTATUS[0]}
set -e

metrics=$(curl -s "$url/metrics" || true)
echo "load-test: server metrics:"
grep -E '^hearth_(requests_rejected_busy_total|client_disconnects_total|cache_evictions|completion_tokens_total) |^hearth_http_requests_total\{endpoint="/v1/chat/completions"' \
  <<<"$metrics" | sed 's/^/  /'

kill -TERM "$server_pid"
set +e
wait "$server_pid"
server_rc=$?
set -e
server_pid=""

status=0
if [[ $client_rc -ne 0 ]]; then
  echo "load-test: FAIL: request errors or a server not idle after the load" \
    "(see errorKinds/firstError/idle above)" >&2
  status=1
fi
growth=$(node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).rss_mb;
  console.log(r.after_warmup > 0 ? ((r.end - r.after_warmup) / r.after_warmup * 100).toFixed(1) : "0");
' "$work/result.json" 2>/dev/null || echo "?")
echo "load-test: RSS growth from after the warm-up to the end: ${growth}% (bound ${max_growth}%)"
if [[ $growth == "?" ]] || node -e "process.exit(Number('$growth') > $max_growth ? 0 : 1)"; then
  echo "load-test: FAIL: RSS not stable after the warm-up" >&2
  status=1
fi
if [[ $server_rc -ne 0 ]]; then
  echo "load-test: FAIL: the server exited $server_rc after SIGTERM" >&2
  tail -20 "$work/server.log" >&2
  status=1
fi
[[ $status -eq 0 ]] && echo "load-test: PASS"
exit $status
