// The engine's canonical exp and the functions built on it: canon::exp_f32 is close
// to the true exp; its SIMD twins, the softmax and SiLU give exactly the bits of
// their scalar definitions in canonical.h, on edge values and random inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "attention_test_util.h"
#include "engine/cpu_features.h"
#include "engine/kernels/canonical.h"
#include "engine/kernels/kernel_set.h"
#include "engine/model/activation.h"
#include "engine/model/attention.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine {
namespace {

// Edge values and a dense sweep of the finite range, plus random ones.
std::vector<float> exp_inputs() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {0.0f,    -0.0f,      1.0f,        -1.0f,     -86.99f,       -87.0f,
                           -87.01f, -87.5f,     -88.0f,      -100.0f,   87.9f,         88.0f,
                           88.01f,  89.0f,      -inf,        inf,       std::nanf(""), 1e-30f,
                           -1e-30f, 0.3465736f, -0.3465736f, 0.3465737f};
  for (float x = -90.0f; x <= 90.0f; x += 0.0137f) xs.push_back(x);
  // Every float of [-87, -86]: results down at 2^-126 and below it, where the SIMD
  // twins' p * 2^n (vscalefps on AVX-512) must round as the scalar multiply does.
  for (float x = -87.0f; x <= -86.0f; x = std::nextafter(x, 0.0f)) xs.push_back(x);
  Lcg rng{7};
  for (int i = 0; i < 4000; ++i) xs.push_back(rng.next() * 20.0f);
  return xs;
}

TEST(CanonExp, WithinOneUlpOfTrueExp) {
  for (float x : exp_inputs()) {
    if (!std::isfinite(x) || x < canon::kExpMin || x > canon::kExpMax) continue;
    const double want = std::exp(static_cast<double>(x));
    const double got = canon::exp_f32(x);
    const double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(want)) - 23);
    EXPECT_LE(std::fabs(got - want), 1 * ulp) << "x = " << x;
  }
}

TEST(CanonExp, EdgesFollowTheDefinition) {
  EXPECT_EQ(canon::exp_f32(0.0f), 1.0f);
  EXPECT_EQ(canon::exp_f32(-88.0f), 0.0f);
  EXPECT_EQ(canon::exp_f32(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isinf(canon::exp_f32(89.0f)));
  EXPECT_TRUE(std::isnan(canon::exp_f32(std::nanf(""))));
  EXPECT_GT(canon::exp_f32(-87.0f), 0.0f);
  EXPECT_TRUE(std::isfinite(canon::exp_f32(88.0f)));
}

// Every table this CPU runs (in a portable build too: the twins are chosen at run
// time), whole and with odd counts so the scalar tails are crossed as well.
TEST(CanonExp, SimdTwinsGiveTheScalarBits) {
  const std::vector<float> xs = exp_inputs();
  int checked = 0;
  for (const KernelSet* k : runnable_kernel_sets()) {
    if (k->exp_f32 == nullptr) continue;
    for (size_t n : {xs.size(), size_t{23}, size_t{7}}) {
      std::vector<float> out(n);
      k->exp_f32(xs.data(), out.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i, ++checked)
        ASSERT_EQ(fp32_to_bits(out[i]), fp32_to_bits(canon::exp_f32(xs[i])))
            << k->isa << " x = " << xs[i] << " n = " << n;
    }
  }
  if (checked == 0) GTEST_SKIP() << "SKIPPED: no kernel table here has a SIMD exp";
}

// softmax_f16 against its scalar definition, for lengths around the 16-lane blocks.
TEST(CanonExp, SoftmaxMatchesItsScalarDefinition) {
  Lcg rng{11};
  for (int32_t n : {1, 2, 15, 16, 17, 31, 33, 100, 257, 2049}) {
    std::vector<float> s(static_cast<size_t>(n));
    for (float& v : s) v = rng.next() * 30.0f;
    const float scale = 0.125f;
    std::vector<float> want = s;
    float max = -std::numeric_limits<float>::infinity();
    for (float& v : want) {
      v = v * scale;
      max = v > max ? v : max;
    }
    canon::SumLanes16 sum;
    for (int32_t p = 0; p < n; ++p) {
      want[p] = canon::exp_f32(want[p] - max);
      sum.v[p % 16] += static_cast<double>(want[p]);
    }
    const float inv = static_cast<float>(1.0 / sum.reduce());
    for (float& v : want) v = fp16_to_fp32(fp32_to_fp16(v * inv));

    // The public entry (the active table's) and every runnable table's own.
    std::vector<float> got = s;
    softmax_f16(got.data(), n, scale);
    for (int32_t p = 0; p < n; ++p)
      ASSERT_EQ(fp32_to_bits(got[p]), fp32_to_bits(want[p])) << "n = " << n << " p = " << p;
    for (const KernelSet* k : runnable_kernel_sets()) {
      if (k->softmax_f16 == nullptr) continue;
      got = s;
      k->softmax_f16(got.data(), n, scale);
      for (int32_t p = 0; p < n; ++p)
        ASSERT_EQ(fp32_to_bits(got[p]), fp32_to_bits(want[p]))
            << k->isa << " n = " << n << " p = " << p;
    }
  }
}

TEST(CanonExp, SiluMulMatchesItsScalarDefinition) {
  Lcg rng{13};
  std::vector<float> g, u;
  for (float x : {0.0f, -0.0f, 100.0f, -100.0f, 88.5f, -88.5f, 1e-20f})
    g.push_back(x), u.push_back(1.5f);
  while (g.size() < 1037) {
    g.push_back(rng.next() * 12.0f);
    u.push_back(rng.next() * 3.0f);
  }
  std::vector<float> got = g;
  silu_mul(got.data(), u.data(), static_cast<int64_t>(got.size()));
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_EQ(fp32_to_bits(got[i]), fp32_to_bits(canon::silu_mul(g[i], u[i]))) << "g = " << g[i];
  for (const KernelSet* k : runnable_kernel_sets()) {
    if (k->silu_mul == nullptr) continue;
    got = g;
    k->silu_mul(got.data(), u.data(), static_cast<int64_t>(got.size()));
    for (size_t i = 0; i < g.size(); ++i)
      ASSERT_EQ(fp32_to_bits(got[i]), fp32_to_bits(canon::silu_mul(g[i], u[i])))
          << k->isa << " g = " << g[i];
  }
}

}  // namespace
}  // namespace hearth::engine
