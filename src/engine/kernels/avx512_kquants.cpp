// AVX-512 kernels for the k-quant weight formats (Q4_K, Q5_K, Q6_K x Q8_K).
#include "engine/kernels/avx512_parts.h"

#if defined(__x86_64__)

namespace hearth::engine {

void install_avx512_kquants(KernelSet* /*k*/) {}

}  // namespace hearth::engine

#endif  // x86-64
