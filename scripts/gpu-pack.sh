#!/usr/bin/env bash
# Packs what a GPU machine needs to check hearth's CUDA backend with scripts/gpu-check.sh,
# for machines that build nothing themselves (a lent GPU without network): the CUDA
# build's hearth and test_engine (stripped), the shared libraries they link beyond glibc
# and libstdc++ (a bare image may lack them), the reference cases and models of the
# GPU-capable architectures, and optionally llama.cpp's CUDA drivers for the comparison.
#   scripts/gpu-pack.sh [--build build-cuda] [--out .gpu] [--lc DIR] [--models small|all|agree|none]
# The transfer to a lent GPU is capped (64 MiB with the repository): `small` (the default,
# ~50 MiB) carries every GPU weight type's reference models; llama.cpp's CUDA drivers
# (--lc, ~35 MiB each before compression) go in a second pack with `--models agree`.
# DIR of --lc holds llama.cpp binaries built beside the project (never part of this repo).
set -euo pipefail
build=build-cuda out=.gpu lc="" models=small
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2 ;;
    --out) out=$2 ;;
    --lc) lc=$2 ;;
    --models) models=$2 ;;
    *) echo "gpu-pack.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift 2
done
shared=${HEARTH_SHARED_DIR:-$(cd "$(dirname "$0")/.." && pwd)/../shared}
[[ -x $build/hearth && -x $build/tests/test_engine ]] ||
  { echo "gpu-pack.sh: build $build first (cmake -DHEARTH_CUDA=ON; targets hearth test_engine)" >&2; exit 2; }
rm -rf "$out" && mkdir -p "$out/bin" "$out/lib" "$out/shared/reference/models" \
  "$out/shared/reference/architectures/models"
strip -o "$out/bin/hearth" "$build/hearth"
strip -o "$out/bin/test_engine" "$build/tests/test_engine"
cp scripts/gpu-check.sh scripts/gpu-agreement.py "$out/bin/"
# Every linked library but the C runtime's own.
for bin in "$build/hearth" "$build/tests/test_engine"; do
  ldd "$bin" | awk '/=> \// {print $3}' | grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.so' |
    while read -r so; do cp -L "$so" "$out/lib/"; done
done
# Reference cases of the GPU-capable models (dense llama-family, CUDA weight types).
base=(small-llama-q4_0 small-llama-q8_0 small-llama-q4_k_m small-llama-q5_k_m small-llama-q6_k
      small-llama-f16 small-llama-bf16 small-qwen2-q4_k_m)
# small-qwen3-q4_k_m: Q4_K with Q5_0 rows (the 32-element fallback of K-quant files).
arch=(small-qwen3-f16 small-phi3-q8_0 small-qwen3-q4_k_m)
# `--models agree`: two models for the llama.cpp agreement check only (a second device
# call carrying llama.cpp's binaries, which leave no room for the rest); `none`: no models.
if [[ $models == agree ]]; then
  base=(small-llama-q4_k_m small-llama-f16)
  arch=()
elif [[ $models == none ]]; then
  base=()
  arch=()
fi
if [[ $models == all ]]; then
  base+=(small-llama-f32 small-llama-tied-f16 small-llama-rope500k-q8_0 small-qwen2-f32
         small-llama-q4_1 small-llama-q5_0 small-llama-q5_1)
  arch+=(small-phi3-f16 small-phi3-gqa-q8_0 small-gemma2-q8_0)
fi
for m in "${base[@]+"${base[@]}"}"; do
  cp "$shared/reference/models/$m.gguf" "$out/shared/reference/models/"
  cp "$shared/reference/$m".P*.txt "$out/shared/reference/"
done
for m in "${arch[@]+"${arch[@]}"}"; do
  cp "$shared/reference/architectures/models/$m.gguf" "$out/shared/reference/architectures/models/"
  cp "$shared/reference/architectures/$m".P*.txt "$out/shared/reference/architectures/" 2>/dev/null || true
done
if [[ -n $lc ]]; then
  mkdir -p "$out/lc" && cp -a "$lc"/. "$out/lc/"
fi
# Binaries and libraries compress about 3x; the random-weight models hardly at all.
tar -C "$out" -cf - bin lib $( [[ -n $lc ]] && echo lc ) | xz -T2 -6 >"$out/bin.tar.xz"
rm -rf "$out/bin" "$out/lib" "$out/lc"
du -sh "$out" "$out"/*
