#!/usr/bin/env bash
# `hearth bench engine` side by side with llama.cpp's lc-bench driver (built outside this
# repo, see docs/benchmarks.md "MoE and dense families vs llama.cpp"): the two
# alternate ROUNDS times on the same model file so that background load hits both alike;
# prints each run and, per key (ppN, tgM), the median over rounds of each side and the
# ratio hearth / llama.cpp. Nothing of llama.cpp is in this repo: pass the driver's path.
#   scripts/bench-vs-llamacpp.sh LC_BENCH MODEL [--hearth BIN] [--rounds 3] [--threads 2]
#                                [--prompt 512] [--gen 32] [--depth 128] [--reps 3]
# Both sides: the same synthetic tokens, prefill of --prompt tokens in one call, --gen
# greedy decode steps after a --depth-token prompt, F16 KV cache, the median of --reps.
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n 2,10p "$0"; exit 2; }
lc=$1 model=$2
shift 2
hearth=${HEARTH:-build/hearth} rounds=3 threads=2 prompt=512 gen=32 depth=128 reps=3
while [[ $# -gt 0 ]]; do
  case $1 in
    --hearth) hearth=$2 ;;
    --rounds) rounds=$2 ;;
    --threads) threads=$2 ;;
    --prompt) prompt=$2 ;;
    --gen) gen=$2 ;;
    --depth) depth=$2 ;;
    --reps) reps=$2 ;;
    *) echo "bench-vs-llamacpp.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift 2
done
[[ -x $lc ]] || { echo "bench-vs-llamacpp.sh: LC_BENCH '$lc' is not executable" >&2; exit 2; }
[[ -x $hearth ]] || { echo "bench-vs-llamacpp.sh: --hearth '$hearth' is not executable" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq "$rounds"); do
  "$hearth" bench engine -m "$model" --threads "$threads" --prompts "$prompt" --gen "$gen" \
    --gen-after "$depth" --reps "$reps" --quiet --json >"$out/hearth.$r.json"
  echo "round $r hearth:    $(tr -d '\n ' <"$out/hearth.$r.json" | grep -o '"pp[0-9]*":[0-9.e+-]*\|"tg[0-9]*":[0-9.e+-]*' | tr '\n' ' ')"
  "$lc" -m "$model" -t "$threads" --prompt "$prompt" --gen "$gen" --depth "$depth" \
    --reps "$reps" --json >"$out/llamacpp.$r.json"
  echo "round $r llama.cpp: $(tr -d '\n ' <"$out/llamacpp.$r.json" | grep -o '"pp[0-9]*":[0-9.e+-]*\|"tg[0-9]*":[0-9.e+-]*' | tr '\n' ' ')"
done
python3 - "$out" "$rounds" "$model" <<'PY'
import json, os, re, statistics, sys
out, rounds, model = sys.argv[1], int(sys.argv[2]), os.path.basename(sys.argv[3])
runs = {w: [json.load(open(f"{out}/{w}.{r}.json")) for r in range(1, rounds + 1)]
        for w in ("hearth", "llamacpp")}
keys = [k for k in runs["hearth"][0] if re.fullmatch(r"(pp|tg)[0-9]+", k) and k in runs["llamacpp"][0]]
print(f"{'key':8} {'hearth':>10} {'llama.cpp':>10} {'ratio':>7}   (tok/s, medians of {rounds} alternated rounds)")
row = []
for k in keys:
    h = statistics.median(x[k] for x in runs["hearth"])
    l = statistics.median(x[k] for x in runs["llamacpp"])
    print(f"{k:8} {h:10.2f} {l:10.2f} {h / l:6.2f}x")
    row.append(f"{h:.1f} / {l:.1f} ({h / l:.2f}x)")
print("markdown: | " + model + " | " + " | ".join(row) + " |")
PY
