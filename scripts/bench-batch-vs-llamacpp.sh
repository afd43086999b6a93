#!/usr/bin/env bash
# `hearth bench batch` side by side with llama.cpp's lc-bench driver --streams (built
# outside this repo, see docs/benchmarks.md "Many streams"): S sequences at D positions
# each, every step one forward / llama_decode with one token per sequence. The two
# alternate ROUNDS times on the same model file so that background load hits both
# alike; prints each run and, per (streams, depth), the medians over rounds of the
# aggregate tokens/s of each side, the ratio hearth / llama.cpp, and each side's
# per-stream speed as a fraction of its own single stream (when 1 is in --streams).
# Nothing of llama.cpp is in this repo: pass the driver's path.
#   scripts/bench-batch-vs-llamacpp.sh LC_BENCH MODEL [--hearth BIN] [--rounds 3]
#       [--threads 2] [--streams 1,2,4,8,16] [--depths 512] [--gen 16] [--reps 1]
#       [--json FILE] [--plot FILE.svg]
# --json FILE: the medians as a JSON array of rows, one per engine, depth and streams:
# {"engine": "hearth" | "llama.cpp", "depth", "streams", "aggregate_tok_s",
# "per_stream_tok_s", "series", ...}. --plot FILE.svg: those rows drawn by `hearth plot`
# (the --hearth binary): aggregate tok/s by streams, a line per engine (and depth, when
# several are asked).
# llama.cpp prefills each of its S sequences with D tokens on every rep (hearth prefills
# one and copies it), so large S x D is slow on its side. OMP_WAIT_POLICY defaults to
# passive here (llama.cpp's spinning OpenMP barriers collapse on a loaded machine);
# export it to override.
set -euo pipefail
usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 2; }
[[ $# -ge 2 ]] || usage
lc=$1 model=$2
shift 2
hearth=${HEARTH:-build/hearth} rounds=3 threads=2 streams=1,2,4,8,16 depths=512 gen=16 reps=1
json="" plot=""
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || { echo "bench-batch-vs-llamacpp.sh: option '$1' needs a value" >&2; exit 2; }
  case $1 in
    --hearth) hearth=$2 ;;
    --rounds) rounds=$2 ;;
    --threads) threads=$2 ;;
    --streams) streams=$2 ;;
    --depths) depths=$2 ;;
    --gen) gen=$2 ;;
    --reps) reps=$2 ;;
    --json) json=$2 ;;
    --plot) plot=$2 ;;
    *) echo "bench-batch-vs-llamacpp.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift 2
done
[[ -x $lc ]] || { echo "bench-batch-vs-llamacpp.sh: LC_BENCH '$lc' is not executable" >&2; exit 2; }
[[ -x $hearth ]] || { echo "bench-batch-vs-llamacpp.sh: --hearth '$hearth' is not executable" >&2; exit 2; }
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
echo "OMP_WAIT_POLICY=$OMP_WAIT_POLICY, $(uptime | sed 's/.*load/load/')"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq "$rounds"); do
  for d in ${depths//,/ }; do
    "$hearth" bench batch -m "$model" --threads "$threads" --streams "$streams" --positions "$d" \
      --gen "$gen" --reps "$reps" --mix-streams 0 --quiet --json >"$out/hearth.$r.$d.json" 2>/dev/null
    echo "round $r hearth    depth $d: $(python3 -c 'import json,sys; print(" ".join("S=%d:%.1f" % (x["streams"], x["aggregate_tok_s"]) for x in json.load(open(sys.argv[1]))["runs"]))' "$out/hearth.$r.$d.json")"
    line=""
    for s in ${streams//,/ }; do
      "$lc" -m "$model" -t "$threads" --prompt 0 --gen "$gen" --depth "$d" --streams "$s" \
        --ctx $((d + gen)) --reps "$reps" --json >"$out/llamacpp.$r.$d.$s.json"
      line+=" S=$s:$(python3 -c 'import json,sys; print("%.1f" % json.load(open(sys.argv[1]))["tg%s_aggregate" % sys.argv[2]])' "$out/llamacpp.$r.$d.$s.json" "$gen")"
    done
    echo "round $r llama.cpp depth $d:$line"
  done
done
rows=${json:-$out/medians.json}
python3 - "$out" "$rounds" "$model" "$depths" "$streams" "$gen" "$threads" "$rows" <<'PY'
import json, os, statistics, sys
out, rounds, model = sys.argv[1], int(sys.argv[2]), os.path.basename(sys.argv[3])
depths = [int(x) for x in sys.argv[4].split(",")]
streams = [int(x) for x in sys.argv[5].split(",")]
gen, threads, rows_path = sys.argv[6], int(sys.argv[7]), sys.argv[8]
rows = []
print(f"{'depth':>6} {'streams':>7} {'hearth':>9} {'llama.cpp':>9} {'ratio':>7} {'h/1':>6} {'lc/1':>6}"
      f"   (aggregate tok/s, medians of {rounds} alternated rounds; h/1, lc/1: per-stream / 1 stream)")
for d in depths:
    h = {s: [] for s in streams}
    l = {s: [] for s in streams}
    for r in range(1, rounds + 1):
        for x in json.load(open(f"{out}/hearth.{r}.{d}.json"))["runs"]:
            h[x["streams"]].append(x["aggregate_tok_s"])
        for s in streams:
            l[s].append(json.load(open(f"{out}/llamacpp.{r}.{d}.{s}.json"))[f"tg{gen}_aggregate"])
    hm = {s: statistics.median(v) for s, v in h.items()}
    lm = {s: statistics.median(v) for s, v in l.items()}
    for s in streams:
        hs = f"{hm[s] / s / hm[1]:5.0%}" if 1 in hm else "-"
        ls = f"{lm[s] / s / lm[1]:5.0%}" if 1 in lm else "-"
        print(f"{d:6} {s:7} {hm[s]:9.1f} {lm[s]:9.1f} {hm[s] / lm[s]:6.2f}x {hs:>6} {ls:>6}")
        print(f"markdown: | {model} | {d} | {s} | {hm[s]:.1f} / {lm[s]:.1f} (**{hm[s] / lm[s]:.2f}x**) | {hs.strip()} / {ls.strip()} |")
        for engine, m in (("hearth", hm), ("llama.cpp", lm)):
            rows.append({"engine": engine, "depth": d, "streams": s, "aggregate_tok_s": m[s],
                         "per_stream_tok_s": m[s] / s,
                         "series": engine if len(depths) == 1 else f"{engine}, depth {d}",
                         "model": model, "threads": threads, "gen": int(gen), "rounds": rounds})
with open(rows_path, "w") as f:
    json.dump(rows, f, indent=1)
PY
[[ -z $json ]] || echo "medians: $json"
if [[ -n $plot ]]; then
  "$hearth" plot --in "$rows" --x streams --y aggregate_tok_s --series series --log-x \
    --title "Aggregate decode, $(basename "$model"), $threads threads: hearth vs llama.cpp" \
    --x-label "concurrent streams" --y-label "aggregate tokens/s (median of $rounds rounds)" \
    --out "$plot"
  echo "plot: $plot"
fi
