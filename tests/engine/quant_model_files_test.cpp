// Dequantizes every tensor of the shared small-llama models of each type, and
// checks matmul with a real weight matrix against a float reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "engine/matmul.h"
#include "engine/quant/quant.h"
#include "hearth/gguf/gguf.h"
#include "quant_test_util.h"

namespace hearth::engine {
namespace {

std::string model_path(const std::string& suffix) {
  return std::string(HEARTH_SHARED_DIR) + "/reference/models/small-llama-" + suffix + ".gguf";
}

class ModelFileTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ModelFileTest, EveryTensorDequantizesAndMatmulMatchesFloat) {
  const std::string path = model_path(GetParam());
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " is absent";
  auto file = gguf::GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  int checked = 0;
  for (const gguf::TensorInfo& t : file->tensors()) {
    ASSERT_TRUE(is_dequantizable_type(t.type)) << t.name << " type " << quant_type_name(t.type);
    const int64_t cols = static_cast<int64_t>(t.dims[0]);
    const int64_t rows = static_cast<int64_t>(t.n_elements) / cols;
    ASSERT_EQ(quant_row_bytes(t.type, cols) * static_cast<size_t>(rows), t.n_bytes) << t.name;
    std::vector<float> out(static_cast<size_t>(rows * cols));
    const WeightView w{t.type, rows, cols, t.data};
    dequantize_rows(w, 0, rows, out.data());
    for (float v : out) ASSERT_TRUE(std::isfinite(v)) << t.name;
    ++checked;

    // A matrix-shaped weight: matmul vs a double dot of the dequantized rows.
    if (t.dims.size() == 2 && is_supported_weight_type(t.type) && rows >= 8) {
      const auto x = testing::gaussian(static_cast<size_t>(cols * 3), 11);
      std::vector<float> y(static_cast<size_t>(rows * 3));
      ThreadPool pool(2);
      MatmulScratch scratch;
      matmul(w, x.data(), 3, y.data(), pool, scratch);
      for (int64_t tok = 0; tok < 3; ++tok) {
        for (int64_t r = 0; r < rows; r += std::max<int64_t>(1, rows / 16)) {
          double ref = 0, mag = 0;
          for (int64_t c = 0; c < cols; ++c) {
            const double p = static_cast<double>(out[r * cols + c]) * x[tok * cols + c];
            ref += p;
            mag += std::fabs(p);
          }
          // Activation quantization (8-bit, or f16/bf16) bounds the difference.
          const double tol = (t.type == gguf::TensorType::kF32 ? 1e-5 : 0.02) * mag + 1e-5;
          ASSERT_NEAR(y[tok * rows + r], ref, tol) << t.name << " row " << r;
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(SharedModels, ModelFileTest,
                         ::testing::Values("f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1",
                                           "q8_0", "q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace hearth::engine
