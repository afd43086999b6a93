// Every kernel table against the scalar reference (bit for bit), the multi-token
// tile kernels against the single dot (bit for bit), and the reference against
// a double-precision dot of the dequantized rows (within a rounding bound).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/cpu_features.h"
#include "engine/kernels/kernel_set.h"
#include "engine/matmul.h"
#include "quant_test_util.h"

namespace hearth::engine {
namespace {

using gguf::TensorType;
using testing::bits;
using testing::gaussian;
using testing::random_blocks;

std::vector<const KernelSet*> runnable_tables() {
  std::vector<const KernelSet*> v = runnable_kernel_sets();
  v.pop_back();  // the scalar reference itself
  return v;
}

std::vector<uint8_t> activation(TensorType weight, const std::vector<float>& x) {
  std::vector<uint8_t> out(activation_row_bytes(weight, static_cast<int64_t>(x.size())));
  quantize_activation_row(weight, x.data(), static_cast<int64_t>(x.size()), out.data());
  return out;
}

class VecDotTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(VecDotTest, EveryTableMatchesScalarBitForBit) {
  const TensorType t = GetParam();
  const auto tables = runnable_tables();
  if (tables.empty()) GTEST_SKIP() << "SKIPPED: no SIMD kernel table runs on this CPU";
  const int id = static_cast<int>(t);
  for (int64_t n : {256, 512, 2048, 2304}) {
    for (uint32_t seed = 1; seed <= 6; ++seed) {
      const auto w = random_blocks(t, n, seed);
      const auto x = activation(t, gaussian(n, seed + 100, seed % 2 ? 1.0f : 30.0f));
      const float want = scalar_kernels().dot[id](w.data(), x.data(), n);
      for (const KernelSet* k : tables) {
        ASSERT_NE(k->dot[id], nullptr);
        const float got = k->dot[id](w.data(), x.data(), n);
        ASSERT_EQ(bits(got), bits(want)) << k->isa << " " << quant_type_name(t) << " n=" << n
                                         << " seed=" << seed << ": " << got << " vs " << want;
      }
    }
  }
}

TEST_P(VecDotTest, MultiTokenKernelMatchesSingleDot) {
  const TensorType t = GetParam();
  const int id = static_cast<int>(t);
  std::vector<const KernelSet*> tables = runnable_tables();
  tables.push_back(&scalar_kernels());
  // 1280: an odd number of 256-blocks (kernels that group blocks have a tail).
  for (int64_t n : {1024, 1280}) {
    const auto w = random_blocks(t, n, 9);
    const size_t stride = activation_row_bytes(t, n);
    std::vector<uint8_t> xs(stride * kMaxTileTokens);
    for (int i = 0; i < kMaxTileTokens; ++i) {
      const auto a = activation(t, gaussian(n, 200 + i));
      std::copy(a.begin(), a.end(), xs.begin() + i * stride);
    }
    for (const KernelSet* k : tables) {
      if (k->multi[id] == nullptr) continue;
      for (int nt = 1; nt <= kMaxTileTokens; ++nt) {
        float out[kMaxTileTokens];
        k->multi[id](w.data(), xs.data(), stride, nt, n, out);
        for (int i = 0; i < nt; ++i) {
          const float single = k->dot[id](w.data(), xs.data() + i * stride, n);
          ASSERT_EQ(bits(out[i]), bits(single))
              << k->isa << " " << quant_type_name(t) << " nt=" << nt << " n=" << n;
        }
      }
    }
  }
}

TEST_P(VecDotTest, ReferenceIsCloseToExactDot) {
  const TensorType t = GetParam();
  const int id = static_cast<int>(t);
  const int64_t n = 2048;
  const auto w = random_blocks(t, n, 3);
  const auto xf = gaussian(n, 77);
  const auto x = activation(t, xf);
  std::vector<float> wd(n), xd(n);
  dequantize_row(t, w.data(), wd.data(), n);
  dequantize_row(activation_type(t), x.data(), xd.data(), n);
  double exact = 0, mag = 0;
  for (int64_t i = 0; i < n; ++i) {
    exact += static_cast<double>(wd[i]) * xd[i];
    mag += std::fabs(static_cast<double>(wd[i]) * xd[i]);
  }
  const float got = scalar_kernels().dot[id](w.data(), x.data(), n);
  // Float accumulation over n terms: a few ulps of the magnitude sum.
  EXPECT_NEAR(got, exact, 1e-5 * mag + 1e-6) << quant_type_name(t);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, VecDotTest, ::testing::ValuesIn(testing::weight_types()),
                         [](const auto& info) { return std::string(quant_type_name(info.param)); });

// The two-row tiles against the scalar dot, for
// every type a runnable table has them for.
TEST(TwoRowKernels, MatchTheScalarDotBitForBit) {
  int tested = 0;
  for (const TensorType t : testing::weight_types()) {
    const int id = static_cast<int>(t);
    for (int64_t n : {1024, 1040, 2048}) {
      if (n % block_geometry(t).block_size != 0) continue;
      const auto w0 = random_blocks(t, n, 19);
      const auto w1 = random_blocks(t, n, 23);
      const size_t stride = activation_row_bytes(t, n);
      std::vector<uint8_t> xs(stride * kMaxTileTokens);
      for (int i = 0; i < kMaxTileTokens; ++i) {
        const auto a = activation(t, gaussian(n, 300 + i));
        std::copy(a.begin(), a.end(), xs.begin() + i * stride);
      }
      for (const KernelSet* k : runnable_tables()) {
        if (k->multi2[id] == nullptr) continue;
        ++tested;
        for (int nt = 1; nt <= kMaxTileTokens; ++nt) {
          float out0[kMaxTileTokens], out1[kMaxTileTokens];
          k->multi2[id](w0.data(), w1.data(), xs.data(), stride, nt, n, out0, out1);
          for (int i = 0; i < nt; ++i) {
            const uint8_t* xi = xs.data() + i * stride;
            ASSERT_EQ(bits(out0[i]), bits(scalar_kernels().dot[id](w0.data(), xi, n)))
                << k->isa << " " << quant_type_name(t) << " row 0 nt=" << nt << " n=" << n;
            ASSERT_EQ(bits(out1[i]), bits(scalar_kernels().dot[id](w1.data(), xi, n)))
                << k->isa << " " << quant_type_name(t) << " row 1 nt=" << nt << " n=" << n;
          }
        }
      }
    }
  }
  if (tested == 0) GTEST_SKIP() << "SKIPPED: no table on this CPU has a two-row kernel";
}

TEST(DotF32Test, ActiveTableMatchesScalar) {
  for (int64_t n : {7, 32, 64, 100, 128, 1000}) {
    const auto kf = gaussian(n, 5);
    const auto q = gaussian(n, 6);
    const float f32_want =
        scalar_kernels().dot[static_cast<int>(TensorType::kF32)](kf.data(), q.data(), n);
    EXPECT_EQ(bits(dot_f32(kf.data(), q.data(), n)), bits(f32_want)) << "n=" << n;
  }
}

TEST(CpuFeaturesTest, ActiveTableIsConsistent) {
  const KernelSet& k = active_kernels();
  EXPECT_STREQ(kernel_isa(), k.isa);
  EXPECT_STRNE(numerics_id(), "");
  for (TensorType t : testing::weight_types()) EXPECT_NE(k.dot[static_cast<int>(t)], nullptr);
}

}  // namespace
}  // namespace hearth::engine
