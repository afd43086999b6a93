// The pieces the AVX2 table (avx2_kernels.cpp) is assembled from beyond its dot
// kernels. Each installer sets the entries it implements in `k` and leaves the
// rest. Only reached through tables used after cpu_features() reported AVX2, FMA
// and F16C.
#pragma once

#include "engine/kernels/kernel_set.h"
#include "engine/kernels/tile_dispatch.h"

namespace hearth::engine {

// The Q8_0 and F16 activation converters (avx2_quantize.cpp).
void install_avx2_quantizers(KernelSet* k);
// Prefill panels for Q4_0, Q5_0 and Q8_0 against Q8_0 activations (avx2_panels.cpp).
void install_avx2_q8_panels(KernelSet* k);
// Prefill panels for Q4_K, Q5_K and Q6_K against Q8_K (avx2_kquant_panels.cpp).
void install_avx2_kquant_panels(KernelSet* k);
// The F16 prefill GEMM, weights read in place (avx2_f16_gemm.cpp).
void install_avx2_f16_gemm(KernelSet* k);
// The Q4_0 decode mat-vec over groups of 8 rows (avx2_row_group.cpp).
void install_avx2_row_groups(KernelSet* k);
// Q4_0 and Q4_K small-batch prefill from interleaved groups (avx2_group_gemm.cpp).
void install_avx2_group_gemm(KernelSet* k);
// Exp, SiLU, the attention softmax and attention, 8 lanes (avx2_model_kernels.cpp).
void install_avx2_model_kernels(KernelSet* k);

}  // namespace hearth::engine
