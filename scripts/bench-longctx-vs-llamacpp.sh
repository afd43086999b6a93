#!/usr/bin/env bash
# Long context (issue #25 item 2): decode at several depths and prefill of long prompts,
# `hearth bench engine` (and optionally a baseline hearth binary) alternated with
# llama.cpp's lc-bench driver (built outside this repo: docs/benchmarks.md "MoE and dense
# families vs llama.cpp") under each flash-attention setting asked, ROUNDS times on the same
# model file so that background load hits all alike. Prints every run, then per
# measurement the median over rounds of each engine and hearth's ratio to each.
#   scripts/bench-longctx-vs-llamacpp.sh LC_BENCH MODEL [--hearth BIN] [--base BIN]
#       [--rounds 3] [--threads 2] [--depths 512,4096,16384,32768] [--prefills 8192,16384]
#       [--gen 16] [--reps 1] [--kv-fill 0] [--flash-attn off,on] [--json FILE] [--plot FILE.svg]
# --depths: decode tg<gen> after that many prompt positions (both engines prefill them,
# untimed; hearth with --kv-fill F prefills F and repeats their KV rows, llama.cpp always
# prefills). --prefills: pp<N>, N tokens in one call (llama.cpp in 512-token ubatches).
# --depths '' or --prefills '' skips that part. llama.cpp runs with whatever
# OMP_WAIT_POLICY the environment has (say `passive` on a loaded machine).
# --json FILE: the medians as a JSON array of rows, one per measurement and engine ("hearth",
# "hearth base", "llama.cpp fa off", "llama.cpp fa on"): {"kind": "decode", "engine", "depth",
# "tg_tok_s", ...} and {"kind": "prefill", "engine", "prompt_tokens", "pp_tok_s", ...}.
# --plot FILE.svg: the decode rows drawn by `hearth plot` (the --hearth binary): decode
# tok/s by depth, a line per engine and flash-attention setting.
set -euo pipefail
usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 2; }
[[ $# -ge 2 ]] || usage
lc=$1 model=$2
shift 2
hearth=${HEARTH:-build/hearth} base="" rounds=3 threads=2 depths=512,4096,16384,32768
prefills=8192,16384 gen=16 reps=1 kv_fill=0 fas=off,on json="" plot=""
while [[ $# -gt 0 ]]; do
  [[ $# -ge 2 ]] || { echo "bench-longctx-vs-llamacpp.sh: option '$1' needs a value" >&2; exit 2; }
  case $1 in
    --hearth) hearth=$2 ;;
    --base) base=$2 ;;
    --rounds) rounds=$2 ;;
    --threads) threads=$2 ;;
    --depths) depths=$2 ;;
    --prefills) prefills=$2 ;;
    --gen) gen=$2 ;;
    --reps) reps=$2 ;;
    --kv-fill) kv_fill=$2 ;;
    --flash-attn) fas=$2 ;;
    --json) json=$2 ;;
    --plot) plot=$2 ;;
    *) echo "bench-longctx-vs-llamacpp.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift 2
done
[[ -x $lc ]] || { echo "bench-longctx-vs-llamacpp.sh: LC_BENCH '$lc' is not executable" >&2; exit 2; }
[[ -x $hearth ]] || { echo "bench-longctx-vs-llamacpp.sh: --hearth '$hearth' is not executable" >&2; exit 2; }
[[ -z $base || -x $base ]] || { echo "bench-longctx-vs-llamacpp.sh: --base '$base' is not executable" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
IFS=, read -ra depth_list <<<"$depths"
IFS=, read -ra prefill_list <<<"$prefills"
IFS=, read -ra fa_list <<<"$fas"
engines=(hearth)
[[ -n $base ]] && engines+=(base)
fill=()
[[ $kv_fill -gt 0 ]] && fill=(--kv-fill "$kv_fill")
keys() { tr -d '\n ' <"$1" | grep -o '"\(pp\|tg\)[0-9]*":[0-9.e+-]*' | tr '\n' ' '; }
# One measurement: NAME (tg@D or ppN) and the arguments of each engine.
run_all() {
  local r=$1 name=$2 hargs=$3 largs=$4 e fa
  for e in "${engines[@]}"; do
    local bin=$hearth
    [[ $e == base ]] && bin=$base
    # shellcheck disable=SC2086
    "$bin" bench engine -m "$model" --threads "$threads" $hargs --reps "$reps" --quiet --json \
      >"$out/$name.$e.$r.json" 2>>"$out/hearth.log"
    echo "round $r $name $e: $(keys "$out/$name.$e.$r.json")"
  done
  for fa in "${fa_list[@]}"; do
    # shellcheck disable=SC2086
    "$lc" -m "$model" -t "$threads" $largs --flash-attn "$fa" --reps "$reps" --json \
      >"$out/$name.llamacpp-fa-$fa.$r.json"
    echo "round $r $name llama.cpp fa $fa: $(keys "$out/$name.llamacpp-fa-$fa.$r.json")"
  done
}
for r in $(seq "$rounds"); do
  for d in "${depth_list[@]}"; do
    [[ -n $d ]] || continue
    run_all "$r" "tg@$d" "--prompts 8 --gen $gen --gen-after $d ${fill[*]}" \
      "--prompt 8 --gen $gen --depth $d --ctx $((d + gen + 16))"
  done
  for n in "${prefill_list[@]}"; do
    [[ -n $n ]] || continue
    run_all "$r" "pp$n" "--prompts $n --gen 0" "--prompt $n --gen 0 --ctx $((n + 16))"
  done
done
rows=${json:-$out/medians.rows}
python3 - "$out" "$rounds" "$model" "$gen" "$threads" "$rows" <<'PY'
import glob, json, os, statistics, sys
out, rounds, model, gen = sys.argv[1], int(sys.argv[2]), os.path.basename(sys.argv[3]), sys.argv[4]
threads, rows_path = int(sys.argv[5]), sys.argv[6]
names = {"hearth": "hearth", "base": "hearth base"}
rows = []
def value(name, js):
    return js["tg" + gen] if name.startswith("tg@") else js[name]
runs = {}
for f in sorted(glob.glob(f"{out}/*.json")):
    name, engine, _, _ = os.path.basename(f).rsplit(".", 3)
    runs.setdefault(name, {}).setdefault(engine, []).append(value(name, json.load(open(f))))
print(f"{model}: tok/s, medians of {rounds} alternated rounds; ratios are hearth / the other")
# Decode by depth, then prefill by length; hearth, its base, then llama.cpp's settings.
measurements = sorted(runs, key=lambda n: (n.startswith("pp"), int(n.lstrip("tgp@"))))
order = lambda e: (e != "hearth", e != "base", e)
for name in measurements:
    by = dict(sorted(runs[name].items(), key=lambda kv: order(kv[0])))
    h = statistics.median(by["hearth"])
    parts = [f"hearth {h:.2f}"]
    for engine, vals in by.items():
        if engine == "hearth":
            continue
        m = statistics.median(vals)
        parts.append(f"{engine} {m:.2f} ({h / m:.2f}x)")
    print(f"{name:10} " + ", ".join(parts))
    for engine, vals in by.items():
        row = {"engine": names.get(engine, engine.replace("llamacpp-fa-", "llama.cpp fa "))}
        if name.startswith("tg@"):
            row.update(kind="decode", depth=int(name[3:]), tg_tok_s=statistics.median(vals),
                       gen=int(gen))
        else:
            row.update(kind="prefill", prompt_tokens=int(name[2:]),
                       pp_tok_s=statistics.median(vals))
        row.update(model=model, threads=threads, rounds=rounds)
        rows.append(row)
with open(rows_path, "w") as f:
    json.dump(rows, f, indent=1)
PY
[[ -z $json ]] || echo "medians: $json"
if [[ -n $plot ]]; then
  if [[ -z ${depths//,/} ]]; then
    echo "bench-longctx-vs-llamacpp.sh: --plot draws the decode rows, and --depths is empty: no plot" >&2
  else
    "$hearth" plot --in "$rows" --where kind=decode --x depth --y tg_tok_s --series engine --log-x \
      --title "Decode at depth, $(basename "$model"), $threads threads: hearth vs llama.cpp" \
      --x-label "positions before decoding" --y-label "decode tokens/s (median of $rounds rounds)" \
      --out "$plot"
    echo "plot: $plot"
  fi
fi
