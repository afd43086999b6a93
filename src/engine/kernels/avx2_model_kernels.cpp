// The AVX2 table's model-side kernels (x86_model_kernels.inc): exp, SiLU, the
// attention softmax and the position-tiled attention, 8 lanes.
#include "engine/kernels/avx2_parts.h"

#if defined(__x86_64__) || defined(__i386__)

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "engine/kernels/canonical.h"
#include "engine/kernels/kv_blocks.h"
#include "hearth/engine/fp16.h"

// clang-format off
#include "engine/kernels/avx2_target_begin.inc"
// clang-format on

namespace hearth::engine {
namespace {

#define HEARTH_X86_ZMM 0
#include "engine/kernels/x86_model_kernels.inc"
#undef HEARTH_X86_ZMM

}  // namespace
}  // namespace hearth::engine

#include "engine/kernels/x86_target_end.inc"

namespace hearth::engine {

void install_avx2_model_kernels(KernelSet* k) {
  k->exp_f32 = exp_f32_rows;
  k->silu_mul = silu_mul_rows;
  k->softmax_f16 = softmax_f16_row;
  k->to_f16 = to_f16_rows;
  k->round_to_f16 = round_to_f16_rows;
  k->attend = attend;
  k->attend_scores = attend_scores;
  k->attend_finish = attend_finish;
}

}  // namespace hearth::engine

#endif  // x86
