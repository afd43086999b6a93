#!/usr/bin/env bash
# A/B of `hearth bench engine` between two builds on the same machine, alternating the
# binaries (and which goes first) so that background load hits both alike; prints each
# run's figures and the median per binary and key (docs/benchmarks.md).
#   scripts/bench-ab.sh BASE_HEARTH NEW_HEARTH MODEL [ROUNDS] [-- extra bench args]
# Default bench args: --threads 2 --prompts 128,512 --gen 32 --gen-after 128 --reps 3.
set -euo pipefail
base=$1 new=$2 model=$3 rounds=${4:-3}
shift $(($# < 4 ? $# : 4))
[[ ${1:-} == -- ]] && shift
args=("$@")
[[ ${#args[@]} -eq 0 ]] && args=(--threads 2 --prompts 128,512 --gen 32 --gen-after 128 --reps 3)
out=$(mktemp -d)
for r in $(seq "$rounds"); do
  # Which binary goes first alternates too: the second of a pair can run on a machine
  # the first left in another state (caches, page cache, clocks).
  order="base new"
  ((r % 2 == 0)) && order="new base"
  for which in $order; do
    bin=$base
    [[ $which == new ]] && bin=$new
    "$bin" bench engine -m "$model" "${args[@]}" --json >"$out/$which.$r.json"
    echo "round $r $which: $(tr -d '\n ' <"$out/$which.$r.json")"
  done
done
python3 - "$out" "$rounds" <<'PY'
import json, re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
runs = {w: [json.load(open(f"{out}/{w}.{r}.json")) for r in range(1, rounds + 1)] for w in ("base", "new")}
keys = [k for k in runs["base"][0] if re.fullmatch(r"(pp|tg)[0-9]+", k)] + ["read_gbps"]
print(f"{'key':8} {'base':>10} {'new':>10} {'new/base':>9}   (medians of {rounds} alternations; tok/s, read GB/s)")
for k in keys:
    b = statistics.median(x[k] for x in runs["base"])
    n = statistics.median(x[k] for x in runs["new"])
    print(f"{k:8} {b:10.1f} {n:10.1f} {n / b:9.3f}")
PY
rm -rf "$out"
