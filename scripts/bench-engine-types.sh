#!/usr/bin/env bash
# The engine-speed table of docs/engine.md: `hearth bench engine` on a
# TinyLlama-1.1B-shaped gen-model file (random weights) of each type, 2 threads.
# The files (~4.6 GB together) are generated once into ./data/bench/.
#   HEARTH_BENCH_TYPES   (default "q4_0 q4_k_m q8_0 f16")
#   HEARTH_BENCH_THREADS (default 2)
# Run it on an otherwise idle machine: a busy core stalls every thread of a
# 2-thread run at each barrier. Compare ratios measured in one run; quote medians.
set -euo pipefail
cd "$(dirname "$0")/.."
HEARTH=./build/hearth
THREADS=${HEARTH_BENCH_THREADS:-2}
TYPES=${HEARTH_BENCH_TYPES:-"q4_0 q4_k_m q8_0 f16"}
mkdir -p data/bench
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for t in $TYPES; do
  model=data/bench/tinyllama-1.1b-$t.gguf
  if [[ ! -s $model ]]; then
    echo "bench: generating $model (one time)" >&2
    "$HEARTH" gen-model --preset tinyllama-1.1b --type "$t" --seed 1 --out "$model"
  fi
  echo "== $t"
  "$HEARTH" bench engine -m "$model" --threads "$THREADS" --json
done
