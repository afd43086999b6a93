#!/bin/bash
# Long context (issue #20): a 32k-context qwen3-shaped gen-model serves a 16,384-token
# prompt cold, then restores it from the persistent cache, twice:
#   1. `hearth run --cache-dir` (one process per pass: the second restores from disk);
#   2. `hearth serve` and a streamed /v1/completions (seeded sampling), the server
#      restarted on the same cache between the passes.
# Prints prefill / restore times, cache hits, the generated tokens of both passes (they
# must be identical) and the processes' RSS against the KV budget. Results in docs/benchmarks.md.
#
# Usage: scripts/bench-long-context.sh [WORKDIR]   (default ./data/long-context)
# Env:   HEARTH (default build/hearth), PRESET (qwen3 preset, default small),
#        TYPE (default q4_k_m), CTX (default 32768), PROMPT_TOKENS (default 16384),
#        KV_BUDGET (default 1GiB), PORT (default 18431)
set -euo pipefail
HEARTH=$(realpath "${HEARTH:-build/hearth}")
WORK=${1:-data/long-context}
PRESET=${PRESET:-small}
TYPE=${TYPE:-q4_k_m}
CTX=${CTX:-32768}
PROMPT_TOKENS=${PROMPT_TOKENS:-16384}
KV_BUDGET=${KV_BUDGET:-1GiB}
PORT=${PORT:-18431}
mkdir -p "$WORK" && cd "$WORK"
M=qwen3-$PRESET-${CTX}-$TYPE.gguf
[ -f "$M" ] || "$HEARTH" gen-model --arch qwen3 --preset "$PRESET" --ctx "$CTX" --type "$TYPE" \
  --seed 1 --out "$M" >/dev/null

# A deterministic text cut to exactly PROMPT_TOKENS tokens (BOS included).
python3 - "$HEARTH" "$M" "$PROMPT_TOKENS" <<'PY'
import json, random, subprocess, sys
hearth, model, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
random.seed(7)
words = ("once upon a time a small robot counted bright stars while the river sang about the "
         "green hills and the old baker made bread for every child in the quiet village near "
         "the sea").split()
text = " ".join(random.choice(words) + ("." if i % 13 == 12 else "") for i in range(want * 3))
def count(n):
    r = subprocess.run([hearth, "tokenize", "-m", model, "--json", text[:n]], capture_output=True,
                       text=True, check=True)
    return len(json.loads(r.stdout)["tokens"])
lo, hi = want, min(len(text), 6 * want, 120000)  # one argv string: < 128 KiB
while lo < hi:
    mid = (lo + hi + 1) // 2
    lo, hi = (mid, hi) if count(mid) <= want else (lo, mid - 1)
assert count(lo) == want, count(lo)
open("prompt.txt", "w").write(text[:lo])
PY

echo "== hearth run --cache-dir (greedy, 16 tokens)"
rm -rf run-cache
for pass in cold warm; do
  /usr/bin/time -v "$HEARTH" run -m "$M" -p "$(cat prompt.txt)" -n 16 --temp 0 -t 2 \
    --kv-budget "$KV_BUDGET" --cache-dir run-cache --json >"run-$pass.json" 2>"run-$pass.err"
  grep "engine:" "run-$pass.err" | sed 's/^.*engine: /  /'
  python3 -c "import json; j=json.load(open('run-$pass.json')); t=j['timings']; \
print('  $pass: hit %s, cached %d of %d, load %.0f ms, prefill %.0f ms, tokens %s' % (j['cache_hit_kind'], \
j['cached_tokens'], j['prompt_tokens'], t['load_ms'], t['prefill_ms'], j['tokens']))"
  grep "Maximum resident" "run-$pass.err" | sed 's/^\s*/  /'
done
cmp -s <(python3 -c "import json; print(json.load(open('run-cold.json'))['tokens'])") \
  <(python3 -c "import json; print(json.load(open('run-warm.json'))['tokens'])") &&
  echo "  tokens identical" || echo "  TOKENS DIFFER"

echo "== hearth serve, streamed /v1/completions (seeded sampling, 32 tokens; restarted between passes)"
rm -rf serve-cache && mkdir serve-cache
python3 -c "import json; print(json.dumps({'model':'q','prompt':open('prompt.txt').read(), \
'max_tokens':32,'temperature':1.0,'top_k':0,'top_p':1.0,'seed':7}))" >body.json
for pass in cold warm; do
  "$HEARTH" serve -m "q=$M" --parallel 1 --kv-budget "$KV_BUDGET" --cache-dir serve-cache \
    --port "$PORT" 2>"serve-$pass.err" >/dev/null &
  pid=$!
  for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.2; done
  echo "  $pass: RSS after load $(awk '/VmRSS/ {print $2, $3}' /proc/$pid/status)"
  # Streamed, so the time to the first token (cold: the prefill; warm: the restore)
  # is seen apart from the decode.
  python3 - "$PORT" "$pass" <<'PY'
import http.client, json, sys, time
port, name = int(sys.argv[1]), sys.argv[2]
body = json.load(open("body.json"))
body.update(stream=True, stream_options={"include_usage": True})
c = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
t0 = time.time()
c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
first, text, usage = None, "", None
for line in c.getresponse():
    line = line.decode().strip()
    if not line.startswith("data: ") or line == "data: [DONE]":
        continue
    j = json.loads(line[6:])
    usage = j.get("usage") or usage
    for ch in j.get("choices", []):
        if ch.get("text"):
            first = first if first is not None else time.time() - t0
            text += ch["text"]
print("  %s: first token %.3f s, request %.2f s, usage %s" % (name, first, time.time() - t0, usage))
open("serve-%s.txt" % name, "w").write(text)
PY
  echo "  $pass: peak RSS $(awk '/VmHWM/ {print $2, $3}' /proc/$pid/status)"
  kill -TERM $pid && wait $pid || true
done
cmp -s serve-cold.txt serve-warm.txt && echo "  texts identical" || echo "  TEXTS DIFFER"
