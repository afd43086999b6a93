#include "engine/model/activation.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/kernels/canonical.h"
#include "engine/kernels/kernel_set.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine {
namespace {

// 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2))) in float, as ggml_gelu_f32 writes it.
float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  constexpr float kCoefA = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefA * x * x)));
}

const std::vector<uint16_t>& gelu_table() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(65536);
    for (uint32_t i = 0; i < 65536; ++i) {
      t[i] = fp32_to_fp16(gelu_tanh(fp16_to_fp32(static_cast<uint16_t>(i))));
    }
    return t;
  }();
  return table;
}

float gelu(float x, const uint16_t* table) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return fp16_to_fp32(table[fp32_to_fp16(x)]);
}

}  // namespace

void silu_mul(float* gate, const float* up, int64_t n) {
  // The SIMD twins live with the kernel tables, chosen at run time (a portable build
  // still gets them); the loop below is the definition they reproduce.
  if (const auto f = active_kernels().silu_mul; f != nullptr) {
    f(gate, up, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) gate[i] = canon::silu_mul(gate[i], up[i]);
}

void gelu_mul(float* gate, const float* up, int64_t n) {
  const uint16_t* table = gelu_table().data();
  for (int64_t i = 0; i < n; ++i) gate[i] = gelu(gate[i], table) * up[i];
}

void gelu_inplace(float* x, int64_t n) {
  const uint16_t* table = gelu_table().data();
  for (int64_t i = 0; i < n; ++i) x[i] = gelu(x[i], table);
}

}  // namespace hearth::engine
