#!/usr/bin/env bash
# `make run`: serve a model over the OpenAI/Anthropic-compatible API.
#   - HEARTH_MODEL=/path/model.gguf make run   serves that GGUF (id = file stem)
#   - otherwise a small demo model is generated once into ./data/ and served
# Other knobs: HEARTH_HOST (default 127.0.0.1), HEARTH_PORT (default 8080),
# HEARTH_API_KEY (enables auth), HEARTH_SERVE_ARGS (extra `hearth serve` flags),
# HEARTH_BIN (default ./build/hearth), HEARTH_DATA_DIR (default ./data).
# The KV cache's disk tier lives in $HEARTH_DATA_DIR/kvc, so a restart serves warm.
# The banner is printed once the server answers, not before the model is loaded.
set -euo pipefail
cd "$(dirname "$0")/.."

HEARTH=${HEARTH_BIN:-./build/hearth}
HOST=${HEARTH_HOST:-127.0.0.1}
PORT=${HEARTH_PORT:-8080}
MODEL=${HEARTH_MODEL:-}
DATA=${HEARTH_DATA_DIR:-./data}

if [[ ! -x $HEARTH ]]; then
  echo "run-default: $HEARTH is missing; run 'make build' first" >&2
  exit 1
fi
mkdir -p "$DATA"

if [[ -n $MODEL ]]; then
  model_args=(-m "$MODEL")
  model_id=$(basename "${MODEL%.gguf}")
else
  demo=$DATA/hearth-demo-tiny.gguf
  if [[ ! -s $demo ]]; then
    echo "run-default: no model configured; generating a small demo model into $demo"
    echo "             (random weights: it produces gibberish, but every API works)"
    "$HEARTH" gen-model --preset tiny --type f32 --seed 1 --out "$demo.tmp"
    mv "$demo.tmp" "$demo"
  fi
  model_args=(--config "$DATA/hearth-demo.toml")
  # The spec's default save policy (min 512 tokens) never fires on a 512-token demo
  # context; this config lets short chats be cached so a restart serves them warm.
  cat > "$DATA/hearth-demo.toml" <<TOML
[[models]]
id = "demo"
path = "$demo"
n_seq_max = 4
policy = { min_tokens = 32, cold_min_tokens = 32, boundary_trim_tokens = 0, boundary_align_tokens = 32, continued_interval = 128 }
TOML
  model_id=demo
fi

# Double quotes, so the shell that runs the example expands $HEARTH_API_KEY.
auth_header=""
auth_note=""
if [[ -n ${HEARTH_API_KEY:-} ]]; then
  auth_header=' -H "Authorization: Bearer $HEARTH_API_KEY"'
  auth_note="  (API key required: export HEARTH_API_KEY in the shell you run it from)"
fi

# shellcheck disable=SC2086
"$HEARTH" serve "${model_args[@]}" --host "$HOST" --port "$PORT" --cache-dir "$DATA/kvc" \
  ${HEARTH_SERVE_ARGS:-} &
server=$!
# Ctrl-C reaches this script; the server (a background job, which ignores SIGINT) gets
# SIGTERM: in-flight requests finish and the cache is saved.
trap 'kill -TERM "$server" 2>/dev/null || true' INT TERM

# The banner once the server answers: the model is loaded by then.
url_host=$HOST
[[ $url_host == 0.0.0.0 ]] && url_host=127.0.0.1
until curl -s -o /dev/null "http://$url_host:$PORT/health"; do
  if ! kill -0 "$server" 2>/dev/null; then
    wait "$server" || exit $?
    exit 1
  fi
  sleep 0.1
done

cat <<BANNER

  hearth is ready on http://$HOST:$PORT  (model id: $model_id)

  Try it:$auth_note
    curl http://$HOST:$PORT/v1/chat/completions$auth_header \\
      -H 'Content-Type: application/json' \\
      -d '{"model":"$model_id","messages":[{"role":"user","content":"Hello!"}],"max_tokens":32}'

  OpenAI SDKs: base URL http://$HOST:$PORT/v1 ; Anthropic SDKs: base URL http://$HOST:$PORT
  Metrics: http://$HOST:$PORT/metrics   Health: http://$HOST:$PORT/health   API: docs/api.md

  Serve a real GGUF instead:
    HEARTH_MODEL=/path/to/model.gguf make run
    # or: build/hearth serve -m /path/to/model.gguf --cache-dir data/kvc --port $PORT

  Stop with Ctrl-C (in-flight requests finish, the cache is saved).

BANNER

# wait returns early when a trapped signal arrives: wait again for the server's exit.
status=0
while kill -0 "$server" 2>/dev/null; do
  wait "$server" && status=0 || status=$?
done
exit "$status"
