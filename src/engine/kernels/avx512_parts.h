// The pieces the AVX-512 table (avx512_kernels.cpp) is assembled from, one file per
// family of formats. Each installer overwrites the entries it implements in `k`
// (which starts as a copy of the AVX-VNNI or AVX2 table) and leaves the rest.
// Only called when cpu_features() reports AVX2, FMA, F16C and AVX-512 F/BW/VL/VNNI.
#pragma once

#include "engine/kernels/kernel_set.h"
#include "engine/kernels/tile_dispatch.h"

namespace hearth::engine {

// Q4_K, Q5_K, Q6_K against Q8_K activations (avx512_kquants.cpp).
void install_avx512_kquants(KernelSet* k);
// Prefill panels for Q4_K, Q5_K, Q6_K (avx512_kquant_panels.cpp).
void install_avx512_kquant_panels(KernelSet* k);
// The F16 prefill GEMM, weights read in place (avx512_f16_gemm.cpp).
void install_avx512_f16_gemm(KernelSet* k);
// Several tokens over one interleaved Q4_0 group (avx512_group_multi.cpp).
void install_avx512_group_multi(KernelSet* k);
// Exp, SiLU, the attention softmax and attention, 16 lanes (avx512_model_kernels.cpp).
void install_avx512_model_kernels(KernelSet* k);

}  // namespace hearth::engine
