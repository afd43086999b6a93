#!/usr/bin/env bash
# Scripted check of issue #23's acceptance (manual; not part of `make test`, whose
# ColdAfterRestartTest runs the same steps on a smaller gen-model shape): a ~300-token
# chat prompt on the TinyLlama-1.1B Q4_0 preset, served by `hearth serve` with the
# default configuration and a disk cache directory, is warm after a restart.
#
#   1. gen-model --arch llama --preset tinyllama-1.1b --type q4_0 (once, into ./data/bench)
#   2. hearth serve -m MODEL --cache-dir DIR: one chat of ~300 prompt tokens, then SIGTERM
#   3. hearth serve again on the same DIR: the same chat; prints its cached_tokens
#
# Usage: scripts/check-warm-restart.sh      Env: HEARTH_WARM_PRESET (tinyllama-1.1b)
# Exit status: 0 when the second run restored at least 280 prompt tokens.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/serve-lib.sh

preset=${HEARTH_WARM_PRESET:-tinyllama-1.1b}
model=data/bench/${preset}-q4_0.gguf
if [[ ! -f $model ]]; then
  mkdir -p data/bench
  "$HEARTH" gen-model --arch llama --preset "$preset" --type q4_0 --seed 1 --out "$model"
fi
serve_scratch warm-restart
printf '[[models]]\nid = "m"\npath = "%s"\ncontext = 1024\n' "$PWD/$model" >"$work/serve.toml"

# A user message of about 300 prompt tokens, counted by the server's tokenizer.
content=""
chat_body() {
  python3 -c 'import json,sys; print(json.dumps({"messages":[{"role":"user","content":sys.argv[1]}],"max_tokens":4,"temperature":0}))' "$content"
}
run_chat() {
  curl -s "$url/v1/chat/completions" -H 'content-type: application/json' -d "$(chat_body)"
}

serve_start "$work/serve.toml" --cache-dir "$work/kvc"
for i in $(seq 0 400); do
  content+="the cat sat on mat number $i. "
  n=$(curl -s "$url/hearth/tokenize" -H 'content-type: application/json' \
        -d "$(python3 -c 'import json,sys; print(json.dumps({"text":sys.argv[1]}))' "$content")" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["count"])')
  [[ $n -ge 290 ]] && break
done
t0=$(date +%s.%N)
first=$(run_chat)
t1=$(date +%s.%N)
kill -TERM "$server_pid"; wait "$server_pid" || true
serve_start "$work/serve.toml" --cache-dir "$work/kvc"
t2=$(date +%s.%N)
second=$(run_chat)
t3=$(date +%s.%N)
kill -TERM "$server_pid"; wait "$server_pid" || true
server_pid=""

field() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print($2)" "$1"; }
echo "prompt_tokens:          $(field "$first" 'd["usage"]["prompt_tokens"]')"
echo "first run:  cached $(field "$first" 'd["usage"]["prompt_tokens_details"]["cached_tokens"]'), finish_key $(field "$first" 'd["finish_key"]'), $(python3 -c "print(round($t1-$t0,2))") s"
cached=$(field "$second" 'd["usage"]["prompt_tokens_details"]["cached_tokens"]')
echo "after restart: cached $cached, $(python3 -c "print(round($t3-$t2,2))") s"
[[ $cached -ge 280 ]]
