#!/usr/bin/env bash
# Model load as a client sees it: the time from starting `hearth serve -m MODEL` to the
# first token of a 1-token completion, and the server's resident memory then, for each
# weight placement (--weights copy: matrices copied into huge pages at load, the default;
# --weights mapped: read in place from the file mapping). Placements alternate within
# each round; the medians are printed as one JSON object.
#   scripts/serve-ttft.sh MODEL.gguf [ROUNDS=3] [extra serve flags...]
#   HEARTH=path/to/hearth (default build/hearth); COLD=1 drops the model file's pages
#   from the page cache before each start (posix_fadvise; pages other processes map stay)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/serve-lib.sh
model=${1:?usage: scripts/serve-ttft.sh MODEL.gguf [ROUNDS] [serve flags...]}
rounds=${2:-3}
shift $(($# < 2 ? $# : 2))
serve_scratch serve-ttft

drop_cache() {
  python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)' "$1"
}

# One start: prints "ttft_ms rss_kib rss_anon_kib rss_file_kib".
one() {
  local weights=$1
  shift
  [[ ${COLD:-0} == 1 ]] && drop_cache "$model"
  : >"$work/stdout"
  local t0 t1 url=""
  t0=$(date +%s%N)
  "$HEARTH" serve -m "$model" --port 0 -q --weights "$weights" "$@" >"$work/stdout" \
    2>"$work/server.log" &
  server_pid=$!
  while [[ -z $url ]]; do
    url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/stdout")
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 2; }
    [[ -z $url ]] && sleep 0.01
  done
  local id
  id=$(basename "$model" .gguf)
  until curl -sf -o /dev/null "$url/v1/completions" -H 'Content-Type: application/json' \
    -d "{\"model\":\"$id\",\"prompt\":\"Hello\",\"max_tokens\":1,\"temperature\":0}"; do
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 2; }
    sleep 0.01
  done
  t1=$(date +%s%N)
  local rss anon file
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status")
  anon=$(awk '/^RssAnon:/ {print $2}' "/proc/$server_pid/status")
  file=$(awk '/^RssFile:/ {print $2}' "/proc/$server_pid/status")
  kill -TERM "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  echo "$(((t1 - t0) / 1000000)) $rss $anon $file"
}

for _ in $(seq 1 "$rounds"); do
  for w in copy mapped; do echo "$w $(one "$w" "$@")"; done
done | python3 -c '
import json, statistics, sys
runs = {}
for line in sys.stdin:
    w, ttft, rss, anon, file = line.split()
    runs.setdefault(w, []).append((int(ttft), int(rss), int(anon), int(file)))
out = {}
for w, r in runs.items():
    med = lambda i: statistics.median(x[i] for x in r)
    out[w] = {"serve_to_first_token_ms": med(0), "rss_mib": round(med(1) / 1024, 1),
              "rss_anon_mib": round(med(2) / 1024, 1), "rss_file_mib": round(med(3) / 1024, 1),
              "rounds": [x[0] for x in r]}
print(json.dumps(out, indent=2))'
