#!/usr/bin/env bash
# `make bench`: the benchmark suite, JSON figures per subsystem.
#   HEARTH_BENCH_MODEL=/path/model.gguf   engine + cold-warm benches on that file
#   otherwise a TinyLlama-1.1B-shaped Q4_0 model (random weights, ~600 MiB) is
#   generated once into ./data/bench/ and used.
#   HEARTH_BENCH_THREADS (default 2).
# Machines are noisy: compare ratios measured in one run, and quote medians.
set -euo pipefail
cd "$(dirname "$0")/.."
HEARTH=./build/hearth
THREADS=${HEARTH_BENCH_THREADS:-2}
MODEL=${HEARTH_BENCH_MODEL:-}
if [[ -z $MODEL ]]; then
  mkdir -p data/bench
  MODEL=data/bench/tinyllama-1.1b-q4_0.gguf
  if [[ ! -s $MODEL ]]; then
    echo "bench: generating $MODEL (one time)" >&2
    "$HEARTH" gen-model --preset tinyllama-1.1b --type q4_0 --seed 1 --out "$MODEL"
  fi
fi

echo "== hearth bench cache"
"$HEARTH" bench cache --json
echo "== hearth bench engine ($MODEL, $THREADS threads)"
"$HEARTH" bench engine -m "$MODEL" --threads "$THREADS" --json
echo "== hearth bench cold-warm ($MODEL)"
"$HEARTH" bench cold-warm -m "$MODEL" --threads "$THREADS" --json
if [[ -x build/bench/hearth_microbench ]]; then
  echo "== kernel micro-benchmarks"
  build/bench/hearth_microbench --benchmark_min_time=0.2
fi
