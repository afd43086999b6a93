#!/usr/bin/env bash
# Checks hearth's CUDA backend on a machine with an NVIDIA GPU (docs/gpu.md), from a pack
# made by scripts/gpu-pack.sh: the GPU tests (llama.cpp reference agreement, batch
# invariance, warm == cold, partial offload), the kernels' timings, and the benchmarks
# (bench engine, cold-warm, batch on the TinyLlama and Llama-3-8B presets, generated
# there), side by side with llama.cpp's CUDA build when the pack carries it. Full logs go
# to $OUT (default /tmp/gpu-check); a summary is printed last.
#   scripts/gpu-check.sh [--pack .gpu] [--skip-tests] [--skip-bench] [--type q4_k_m]
set -u
pack=.gpu tests=1 bench=1 type=q4_k_m
while [[ $# -gt 0 ]]; do
  case $1 in
    --pack) pack=$2; shift ;;
    --skip-tests) tests=0 ;;
    --skip-bench) bench=0 ;;
    --type) type=$2; shift ;;
    *) echo "gpu-check.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
out=${OUT:-/tmp/gpu-check}
mkdir -p "$out"
t0=$(date +%s)
say() { echo "[$(($(date +%s) - t0))s] $*"; }
pack=$(cd "$pack" && pwd)
[[ -f $pack/bin.tar.xz ]] && tar -C "$pack" -xJf "$pack/bin.tar.xz"
export LD_LIBRARY_PATH=$pack/lib:${LD_LIBRARY_PATH:-}
export HEARTH_SHARED_DIR=$pack/shared
B=$pack/bin
models=${GPU_CHECK_MODELS:-/tmp/gpu-check-models}
mkdir -p "$models"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem \
  --format=csv,noheader | tee "$out/gpu.txt"
nproc | sed 's/^/cpus: /'
"$B/hearth" --version 2>&1 | head -1

# The benchmark models are generated here (random weights, the presets' shapes) while
# the tests run: CPU work beside GPU work.
if [[ $bench == 1 ]]; then
  (
    "$B/hearth" gen-model --preset tinyllama-1.1b --type "$type" --out "$models/tinyllama.gguf" -q
    "$B/hearth" gen-model --preset llama3-8b --type "$type" --out "$models/llama3-8b.gguf" -q
  ) >"$out/gen.log" 2>&1 &
  gen_pid=$!
fi

if [[ $tests == 1 ]]; then
  say "GPU tests"
  (cd "$B" && timeout 300 ./test_engine --gtest_filter='*Cuda*' --gtest_color=no) >"$out/tests.log" 2>&1
  echo "test_engine rc=$?"
  grep -E '^\[  (FAILED|PASSED|SKIPPED) |^gpu |Failure|differ|Expected|error' "$out/tests.log" | head -80
  say "kernel timings"
  (cd "$B" && HEARTH_GPU_BENCH=1 timeout 120 ./test_engine --gtest_filter='*Cuda*Bench*:-CudaEngineBench.*' --gtest_color=no) \
    >"$out/kernels.log" 2>&1
  grep -Ev '^\[|^$|^Note|^Running' "$out/kernels.log" | head -60
fi

if [[ -x $pack/lc/lc-logits-cuda ]]; then
  say "agreement with llama.cpp's CUDA backend (whole rows, teacher-forced)"
  python3 "$B/gpu-agreement.py" --lc "$pack/lc/lc-logits-cuda" --hearth "$B/hearth" \
    "$pack"/shared/reference/*.P1.txt "$pack"/shared/reference/architectures/*.P1.txt \
    >"$out/agreement.txt" 2>&1
  echo "gpu-agreement rc=$?"; cat "$out/agreement.txt"
fi

if [[ $bench == 1 ]]; then
  say "waiting for the benchmark models"
  wait "$gen_pid"; tail -3 "$out/gen.log"
  for m in tinyllama llama3-8b; do
    f=$models/$m.gguf
    [[ -f $f ]] || { echo "no $f"; continue; }
    say "hearth bench engine $m"
    timeout 150 "$B/hearth" bench engine -m "$f" --device cuda:0 --prompts 512 --gen 128 \
      --gen-after 512 --reps 3 --quiet --json >"$out/engine-$m.json" 2>"$out/engine-$m.err"
    tr -d '\n ' <"$out/engine-$m.json" | grep -o '"pp[0-9]*":[0-9.e+-]*\|"tg[0-9]*":[0-9.e+-]*' | tr '\n' ' '; echo
    tail -2 "$out/engine-$m.err"
    say "restore vs host-to-device copy $m"
    (cd "$B" && HEARTH_GPU_BENCH=1 HEARTH_GPU_BENCH_MODEL=$f timeout 120 ./test_engine \
      --gtest_filter='CudaEngineBench.*' --gtest_color=no) >"$out/restore-$m.log" 2>&1
    grep -E '^gpu restore|FAILED|Failure' "$out/restore-$m.log"
    if [[ -x $pack/lc/lc-bench-cuda ]]; then
      say "llama.cpp CUDA $m"
      for fa in on off; do
        timeout 120 "$pack/lc/lc-bench-cuda" -m "$f" --ngl 99 --prompt 512 --gen 128 --depth 512 \
          --reps 3 --flash-attn $fa --json >"$out/lc-$m-fa$fa.json" 2>"$out/lc-$m-fa$fa.err"
        echo "fa $fa: $(tr -d '\n ' <"$out/lc-$m-fa$fa.json" | grep -o '"pp[0-9]*":[0-9.e+-]*\|"tg[0-9]*":[0-9.e+-]*' | tr '\n' ' ')"
      done
    fi
  done
  f=$models/tinyllama.gguf
  if [[ -f $f ]]; then
    say "hearth bench cold-warm tinyllama"
    timeout 120 "$B/hearth" bench cold-warm -m "$f" --device cuda:0 --quiet \
      >"$out/cold-warm.txt" 2>&1; tail -25 "$out/cold-warm.txt"
    say "hearth bench batch tinyllama"
    timeout 120 "$B/hearth" bench batch -m "$f" --device cuda:0 --quiet \
      >"$out/batch.txt" 2>&1; tail -15 "$out/batch.txt"
  fi
fi
say "done"
