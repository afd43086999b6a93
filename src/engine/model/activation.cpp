#include "engine/model/activation.h"

#include <cstdint>

#include "engine/kernels/canonical.h"
#include "engine/kernels/kernel_set.h"

namespace hearth::engine {

void silu_mul(float* gate, const float* up, int64_t n) {
  // The SIMD twins live with the kernel tables, chosen at run time (a portable build
  // still gets them); the loop below is the definition they reproduce.
  if (const auto f = active_kernels().silu_mul; f != nullptr) {
    f(gate, up, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) gate[i] = canon::silu_mul(gate[i], up[i]);
}

}  // namespace hearth::engine
