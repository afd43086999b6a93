#!/usr/bin/env bash
# A/B of the kernel micro-benchmarks (bench/*_bench.cpp) between two build folders on the
# same machine: alternates the binaries ROUNDS times, 7 repetitions each, and prints per
# benchmark the base / new ratio of the fastest repetitions (a CPU-bound kernel's least
# disturbed run) and of the medians (docs/benchmarks.md).
#   scripts/microbench-ab.sh BASE_BUILD NEW_BUILD FILTER [ROUNDS]
# e.g. scripts/microbench-ab.sh ../base/build build 'Quantize|Attention/softmax' 4
set -euo pipefail
base=$1 new=$2 filter=$3 rounds=${4:-4}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq "$rounds"); do
  order="base new"  # which goes first alternates too (bench-ab.sh)
  ((r % 2 == 0)) && order="new base"
  for which in $order; do
    dir=$base
    [[ $which == new ]] && dir=$new
    "$dir/bench/hearth_microbench" --benchmark_filter="$filter" --benchmark_repetitions=7 \
      --benchmark_format=json >"$out/$which.$r.json" 2>/dev/null
  done
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
from collections import defaultdict
out, rounds = sys.argv[1], int(sys.argv[2])
times = defaultdict(list)
for which in ("base", "new"):
    for r in range(1, rounds + 1):
        for b in json.load(open(f"{out}/{which}.{r}.json"))["benchmarks"]:
            if b.get("run_type") == "iteration":
                times[(b["run_name"], which)].append(b["real_time"])
names = sorted({name for name, _ in times})
print(f"{'benchmark':44} {'base min':>10} {'new min':>10} {'min ratio':>9} {'median ratio':>12}")
for name in names:
    b, n = times[(name, "base")], times[(name, "new")]
    print(f"{name:44} {min(b):10.1f} {min(n):10.1f} {min(b) / min(n):9.3f} "
          f"{statistics.median(b) / statistics.median(n):12.3f}")
PY
