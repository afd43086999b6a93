// Rows to F16 (engine/model/half_rows.h): every kernel table's F16C code gives exactly
// fp16.h's scalar bits (round to nearest even, overflow to infinity, subnormal halves,
// the one quiet NaN whatever the payload), on edge values, every rounding tie near the
// F16 range's limits and random values, for lengths around the 8- and 16-lane blocks.
#include "engine/model/half_rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "attention_test_util.h"
#include "engine/cpu_features.h"
#include "engine/kernels/kernel_set.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine {
namespace {

std::vector<float> inputs() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {0.0f,      -0.0f,    1.0f,    -1.0f,         65504.0f,      -65504.0f,
                           65519.99f, 65520.0f, 1e6f,    -1e6f,         inf,           -inf,
                           6.1e-5f,   6.0e-8f,  2.9e-8f, 3.0e-8f,       1e-40f,        -1e-40f,
                           0.1f,      -0.1f,    1e-30f,  std::nanf(""), -std::nanf("")};
  // NaNs with other payloads (F16C would keep their top bits), quiet and signalling.
  for (uint32_t u : {0x7f800001u, 0x7fa00000u, 0x7fffffffu, 0xffc12345u, 0x7fc00001u})
    xs.push_back(fp32_from_bits(u));
  // Halfway cases between neighbouring halves: normal (exponents around 1, the top and the
  // bottom of the range) and subnormal.
  for (uint32_t e : {103u, 110u, 112u, 113u, 127u, 140u, 142u}) {
    for (uint32_t m = 0; m < 64; ++m) {
      xs.push_back(fp32_from_bits(e << 23 | m << 13 | 0x1000u));  // exactly between two halves
      xs.push_back(fp32_from_bits(e << 23 | m << 13 | 0x0fffu));
      xs.push_back(fp32_from_bits(0x80000000u | e << 23 | m << 13 | 0x1001u));
    }
  }
  Lcg rng{11};
  for (int i = 0; i < 3000; ++i) xs.push_back(rng.next() * (i % 3 == 0 ? 70000.0f : 4.0f));
  return xs;
}

TEST(HalfRows, EveryTableMatchesTheScalarConversionBitForBit) {
  const std::vector<float> all = inputs();
  int checked = 0;
  for (const KernelSet* k : runnable_kernel_sets()) {
    if (k->to_f16 == nullptr || k->round_to_f16 == nullptr) continue;
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{15}, int64_t{16}, int64_t{17},
                      int64_t{33}, static_cast<int64_t>(all.size())}) {
      for (size_t at = 0; at + static_cast<size_t>(n) <= all.size(); at += 97) {
        const float* x = all.data() + at;
        std::vector<uint16_t> got(static_cast<size_t>(n));
        k->to_f16(x, got.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(got[static_cast<size_t>(i)], fp32_to_fp16(x[i]))
              << k->isa << " to_f16 of bits 0x" << std::hex << fp32_to_bits(x[i]);
        }
        for (float scale : {1.0f, 0.125f, 0.0883883f}) {
          std::vector<float> rounded(static_cast<size_t>(n));
          k->round_to_f16(x, scale, rounded.data(), n);
          for (int64_t i = 0; i < n; ++i) {
            const float want = fp16_to_fp32(fp32_to_fp16(x[i] * scale));
            ASSERT_EQ(fp32_to_bits(rounded[static_cast<size_t>(i)]), fp32_to_bits(want))
                << k->isa << " round_to_f16 of bits 0x" << std::hex << fp32_to_bits(x[i])
                << " scale " << scale;
          }
        }
        ++checked;
        if (n == static_cast<int64_t>(all.size())) break;
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no kernel table here has the F16 row kernels";
}

TEST(HalfRows, DispatchedCallsGiveTheScalarBits) {
  const std::vector<float> all = inputs();
  const auto n = static_cast<int64_t>(all.size());
  std::vector<uint16_t> h(all.size());
  std::vector<float> r(all.size());
  to_f16(all.data(), h.data(), n);
  round_to_f16(all.data(), 0.5f, r.data(), n);
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(h[i], fp32_to_fp16(all[i])) << i;
    ASSERT_EQ(fp32_to_bits(r[i]), fp32_to_bits(fp16_to_fp32(fp32_to_fp16(all[i] * 0.5f)))) << i;
  }
}

}  // namespace
}  // namespace hearth::engine
