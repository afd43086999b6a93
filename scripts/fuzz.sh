#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each, on corpora seeded with real inputs:
#   gguf     the small .gguf files of ../shared/models (under 4 MiB: big files only
#            slow every mutation)
#   kvc      valid rows the target writes itself (kvc_fuzz --write-seed)
#   request  OpenAI / Anthropic request bodies (first byte picks the endpoint)
#   config   a complete `hearth serve --config` file
#   http     raw HTTP/1.1 exchanges with the live server (stories260K; key "fuzz-key")
#   jinja    chat templates: the shared real ones (../shared/templates) and snippets
# Crashes land in build-fuzz/crashes/<target>/; the script fails on the first one.
# Usage: scripts/fuzz.sh BUILD_DIR SECONDS
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?build dir (e.g. build-fuzz)}
seconds=${2:-60}
shared=${HEARTH_SHARED_DIR:-../shared}

seed() {  # seed TARGET NAME CONTENT
  mkdir -p "$build/corpus/$1"
  printf '%b' "$3" > "$build/corpus/$1/$2"
}

mkdir -p "$build/corpus/gguf"
if [ -d "$shared/models" ]; then
  find "$shared/models" -name '*.gguf' -size -4M -exec cp -n {} "$build/corpus/gguf"/ \;
fi
mkdir -p "$build/corpus/kvc"
"$build/fuzz/kvc_fuzz" --write-seed="$build/corpus/kvc" >/dev/null 2>&1 || true
seed request completion '\x00{"model":"m","prompt":"Once upon a time","max_tokens":8,"temperature":0.7,"top_p":0.9,"stop":["\\n","END"],"stream":true,"stream_options":{"include_usage":true}}'
seed request tokens '\x00{"prompt":[1,2,3,4],"max_tokens":2,"seed":7}'
seed request chat '\x01{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi <|im_end|>"},{"role":"assistant","content":"Hello"},{"role":"user","content":[{"type":"text","text":"again"}]}],"max_tokens":4,"frequency_penalty":0.5}'
seed request messages '\x02{"model":"m","system":"Be brief.","messages":[{"role":"user","content":"Hi"}],"max_tokens":16,"stop_sequences":["x"],"top_k":40}'
seed config full '[server]\nhost = "127.0.0.1"\nport = 8080\napi_key = "k"\n\n[limits]\nmax_body_bytes = "8MiB"\nmax_queued_requests = 4\n\n[tiers.disk]\nenabled = true\ndir = "/tmp/hearth-fuzz"\nquota = "1GiB"\n\n[pressure]\nenabled = true\nsource = "noop"\n\n[[models]]\nid = "m"\npath = "m.gguf"\ncontext = 512\nn_seq_max = 2\ntier = "disk"\npolicy = { min_tokens = 8 }\n'

seed http chat 'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer fuzz-key\r\nContent-Type: application/json\r\nContent-Length: 80\r\n\r\n{"model":"stories","messages":[{"role":"user","content":"Once"}],"max_tokens":3}'
seed http stream 'POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer fuzz-key\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2d\r\n{"prompt":"Once upon","max_tokens":4,"stream"\r\n7\r\n:true}\n\r\n0\r\n\r\n'
seed http pipelined 'GET /health HTTP/1.1\r\nHost: localhost\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: localhost\r\nx-api-key: fuzz-key\r\n\r\nGET /metrics HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer fuzz-key\r\n\r\n'
seed http admin 'POST /hearth/tokenize HTTP/1.1\r\nHost: [::1]:80\r\nAuthorization: Bearer fuzz-key\r\nContent-Type: application/json\r\nContent-Length: 57\r\n\r\n{"model":"stories","text":"a</s>b","parse_special":false}'
seed http anthropic 'POST /v1/messages HTTP/1.1\r\nHost: localhost\r\nx-api-key: fuzz-key\r\nContent-Type: application/json\r\nContent-Length: 78\r\n\r\n{"model":"stories","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}'

mkdir -p "$build/corpus/jinja"
if [ -d "$shared/templates" ]; then
  find "$shared/templates" -name '*.jinja' -exec cp -n {} "$build/corpus/jinja"/ \;
fi
seed jinja loops '{% for m in messages if m.role != "tool" %}{{ loop.index }}{{ m.content | trim }}{% if loop.last %}{% break %}{% endif %}{% endfor %}'
seed jinja macros '{% macro f(a, b=2) %}{{ a ~ b }}{{ caller() if caller is defined }}{% endmacro %}{{ f(1) }}{% set ns = namespace(x=[]) %}{% set ns.x = ns.x + [1] %}{{ ns.x | tojson(indent=2) }}'
seed jinja filters '{{ tools | map(attribute="function") | selectattr("name", "equalto", "get_weather") | list | first | tojson(sort_keys=true) }}{{ messages[1:-1] | length }}{{ "a,b" .split(",") | join("-") | upper }}{{ 7 // 2 ~ 2 ** 3 }}{{ strftime_now("%Y") }}'

seed grammar json 'root ::= "{" ws pair ("," ws pair)* "}"\nws ::= [ \\t\\n]{0,3}\npair ::= "\\"" [a-z]+ "\\":" ws [0-9]+ # c\n\x00{"ab": 12}'
seed grammar schema '{"type":"object","properties":{"a":{"type":"integer","minimum":-5,"maximum":300},"b":{"type":"string","pattern":"^[A-Z]{2}\\d?$"},"c":{"anyOf":[{"$ref":"#/$defs/x"},{"type":"null"}]}},"required":["a"],"$defs":{"x":{"enum":["p",1,true]}}}'

for target in gguf kvc request config http jinja grammar; do
  fuzzer="$build/fuzz/${target}_fuzz"
  crashes="$build/crashes/$target"
  mkdir -p "$crashes"
  echo "fuzz: $target: $(ls "$build/corpus/$target" | wc -l) corpus files, ${seconds}s"
  "$fuzzer" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$crashes/" "$build/corpus/$target" 2>&1 |
    grep -E "^(#[0-9]+ *DONE|==[0-9]+==ERROR|SUMMARY|stat::number_of_executed_units|Done)" || true
  if [ -n "$(ls -A "$crashes")" ]; then
    echo "fuzz: $target found a crash: $(ls "$crashes")" >&2
    exit 1
  fi
done
echo "fuzz: all targets ran ${seconds}s without a crash"
