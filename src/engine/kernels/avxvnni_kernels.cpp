// AVX-VNNI (VEX vpdpbusd) variant of the 32-element-block kernels: the AVX2
// table with Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 replaced. vpdpbusd yields the same exact
// int32 lane sums as maddubs+madd, so results are bit-identical to the AVX2 and
// scalar tables (same numerics id). Only selected when cpuid reports AVX-VNNI.
#include "engine/kernels/kernel_set.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cstring>

#include "engine/quant/blocks.h"
#include "engine/quant/scales.h"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avxvnni"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")
#endif

#define HEARTH_X86_VNNI 1

namespace hearth::engine {
namespace {

#include "engine/kernels/x86_dot32.inc"

}  // namespace
}  // namespace hearth::engine

#undef HEARTH_X86_VNNI

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace hearth::engine {
namespace {

template <template <int> class K>
void put(KernelSet* k, gguf::TensorType t) {
  k->dot[static_cast<int>(t)] = as_dot<K<1>::run>;
  k->multi[static_cast<int>(t)] = as_multi<K>;
}

KernelSet make_avxvnni() {
  using T = gguf::TensorType;
  KernelSet k = *avx2_kernels();
  k.isa = "avx2-vnni";
  put<Dot32<FmtQ4_0>::K>(&k, T::kQ4_0);
  put<Dot32<FmtQ4_1>::K>(&k, T::kQ4_1);
  put<Dot32<FmtQ5_0>::K>(&k, T::kQ5_0);
  put<Dot32<FmtQ5_1>::K>(&k, T::kQ5_1);
  put<Dot32<FmtQ8_0>::K>(&k, T::kQ8_0);
  return k;
}

}  // namespace

const KernelSet* avxvnni_kernels() {
  static const KernelSet k = make_avxvnni();
  return &k;
}

}  // namespace hearth::engine

#endif  // x86
