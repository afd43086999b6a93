// quantize_row -> dequantize_row keeps the error within what each format can do.
#include <gtest/gtest.h>

#include <cmath>

#include "quant_test_util.h"

namespace hearth::engine {
namespace {

using gguf::TensorType;
using testing::gaussian;
using testing::quantized;

struct Bound {
  TensorType type;
  double max_rel_rmse;  // RMS error / RMS signal on N(0,1) data
};

class RoundTripTest : public ::testing::TestWithParam<Bound> {};

TEST_P(RoundTripTest, ErrorWithinFormatBound) {
  const Bound b = GetParam();
  const int64_t n = 4096;
  const auto x = gaussian(n, 42);
  const auto q = quantized(b.type, x);
  std::vector<float> y(n);
  dequantize_row(b.type, q.data(), y.data(), n);
  double err = 0, sig = 0;
  for (int64_t i = 0; i < n; ++i) {
    err += (x[i] - y[i]) * (x[i] - y[i]);
    sig += x[i] * x[i];
  }
  const double rel = std::sqrt(err / sig);
  EXPECT_LE(rel, b.max_rel_rmse) << quant_type_name(b.type);
  // A format must also not be "too good to be true" (guards against a test that
  // compares the input with itself): only the float formats may be near exact.
  if (b.max_rel_rmse > 0.005) {
    EXPECT_GT(rel, 1e-4) << quant_type_name(b.type);
  }
}

// Bounds: half a quantization step of the format at its typical scale, with
// headroom (measured values are listed in docs/engine-kernels.md).
INSTANTIATE_TEST_SUITE_P(
    AllTypes, RoundTripTest,
    ::testing::Values(Bound{TensorType::kF32, 0.0}, Bound{TensorType::kF16, 0.0005},
                      Bound{TensorType::kBF16, 0.004}, Bound{TensorType::kQ8_0, 0.006},
                      Bound{TensorType::kQ8_1, 0.006}, Bound{TensorType::kQ8_K, 0.009},
                      Bound{TensorType::kQ5_0, 0.05}, Bound{TensorType::kQ5_1, 0.05},
                      Bound{TensorType::kQ4_0, 0.11}, Bound{TensorType::kQ4_1, 0.10},
                      Bound{TensorType::kQ6_K, 0.025}, Bound{TensorType::kQ5_K, 0.045},
                      Bound{TensorType::kQ4_K, 0.09}, Bound{TensorType::kQ3_K, 0.20},
                      Bound{TensorType::kQ2_K, 0.40}),
    [](const auto& info) { return std::string(quant_type_name(info.param.type)); });

TEST(QuantizeRowTest, ZerosStayZero) {
  for (TensorType t :
       {TensorType::kQ4_0, TensorType::kQ8_0, TensorType::kQ4_K, TensorType::kQ6_K,
        TensorType::kQ2_K, TensorType::kQ3_K, TensorType::kQ5_K, TensorType::kQ8_K}) {
    std::vector<float> x(256, 0.0f), y(256, 1.0f);
    const auto q = quantized(t, x);
    dequantize_row(t, q.data(), y.data(), 256);
    for (float v : y) ASSERT_EQ(v, 0.0f) << quant_type_name(t);
  }
}

TEST(QuantizeRowTest, UnsupportedTypeIsNamed) {
  std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> out(1024);
  const Status s = quantize_row(TensorType::kIQ2_XXS, x.data(), out.data(), 256);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  EXPECT_NE(s.message().find("iq2_xxs"), std::string::npos) << s.message();
}

TEST(QuantizeRowTest, BadLengthIsRejected) {
  std::vector<float> x(40, 1.0f);
  std::vector<uint8_t> out(1024);
  const Status s = quantize_row(TensorType::kQ4_0, x.data(), out.data(), 40);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
}

TEST(QuantizeRowTest, Q8_KBlockSumsMatchQuants) {
  const auto x = gaussian(512, 7);
  const auto q = quantized(TensorType::kQ8_K, x);
  const auto* b = reinterpret_cast<const BlockQ8_K*>(q.data());
  for (int blk = 0; blk < 2; ++blk) {
    for (int j = 0; j < 16; ++j) {
      int s = 0;
      for (int l = 0; l < 16; ++l) s += b[blk].qs[16 * j + l];
      EXPECT_EQ(b[blk].bsums[j], s);
    }
  }
}

TEST(QuantizeRowTest, SupportPredicates) {
  EXPECT_TRUE(is_supported_weight_type(TensorType::kQ4_0));
  EXPECT_TRUE(is_supported_weight_type(TensorType::kQ6_K));
  EXPECT_TRUE(is_supported_weight_type(TensorType::kBF16));
  EXPECT_FALSE(is_supported_weight_type(TensorType::kQ8_K));
  EXPECT_FALSE(is_supported_weight_type(TensorType::kIQ4_NL));
}

}  // namespace
}  // namespace hearth::engine
