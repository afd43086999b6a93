// The activations: GELU as ggml's CPU backend evaluates it (its F16 table), and SiLU.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/model/activation.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine {
namespace {

float gelu_f16(float x) {
  std::vector<float> g = {x}, u = {1.0f};
  gelu_mul(g.data(), u.data(), 1);
  return g[0];
}

// The tanh GELU in double, for comparison.
double gelu_exact(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

TEST(Activation, GeluIsTheF16TableOfTheTanhForm) {
  EXPECT_EQ(gelu_f16(0.0f), 0.0f);
  EXPECT_EQ(gelu_f16(-10.0f), 0.0f);  // x <= -10: 0
  EXPECT_EQ(gelu_f16(-50.0f), 0.0f);
  EXPECT_EQ(gelu_f16(10.0f), 10.0f);  // x >= 10: x
  EXPECT_EQ(gelu_f16(123.5f), 123.5f);
  for (float x : {-9.9f, -3.0f, -0.7f, -0.01f, 0.013f, 0.5f, 1.0f, 2.5f, 7.3f, 9.99f}) {
    const float got = gelu_f16(x);
    // An F16 value (the table's output) ...
    EXPECT_EQ(got, fp16_to_fp32(fp32_to_fp16(got))) << x;
    // ... of the GELU of x rounded to F16, within F16 rounding.
    const double want = gelu_exact(fp16_to_fp32(fp32_to_fp16(x)));
    EXPECT_NEAR(got, want, std::fabs(want) * 1e-3 + 1e-6) << x;
  }
  // Inputs that round to the same F16 give the same output.
  EXPECT_EQ(gelu_f16(1.0f), gelu_f16(1.0001f));
}

TEST(Activation, GeluMulScalesByUp) {
  std::vector<float> g = {1.0f, -11.0f, 12.0f, 0.3f}, u = {2.0f, 5.0f, 0.5f, -1.0f};
  const std::vector<float> plain = {gelu_f16(1.0f), 0.0f, 12.0f, gelu_f16(0.3f)};
  gelu_mul(g.data(), u.data(), 4);
  EXPECT_EQ(g[0], plain[0] * 2.0f);
  EXPECT_EQ(g[1], 0.0f);
  EXPECT_EQ(g[2], 6.0f);
  EXPECT_EQ(g[3], -plain[3]);
}

}  // namespace
}  // namespace hearth::engine
