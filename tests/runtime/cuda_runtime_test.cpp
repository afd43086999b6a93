// The runtime with a model's layers on a GPU: warm == cold through the real cache (an
// exact hit restores the row into device KV through kv_import_spans' pinned staging, a
// prefix hit restores and prefills the rest), and the model's facts name the device.
// Skips where cuda:0 is not usable (a CPU build, a machine without a GPU); test_gpu_emu
// runs it on the emulated GPU in every build (tests/gpu_emu).
#include <filesystem>
#include <string>

#include "engine_warm_cold.h"
#include "hearth/engine/device_spec.h"

namespace hearth::runtime {
namespace {
using namespace testing;

#define REQUIRE_CUDA0()                                                    \
  do {                                                                     \
    const Status usable = check_device_available(*parse_device("cuda:0")); \
    if (!usable.ok()) {                                                    \
      GTEST_SKIP() << "SKIPPED: " << usable.message();                     \
    }                                                                      \
  } while (0)

ModelConfig gpu_config(const std::string& path, bool caching, int32_t n_gpu_layers) {
  ModelConfig c = engine_config("m", path, /*n_seq_max=*/1, caching);
  c.device = "cuda:0";
  c.n_gpu_layers = n_gpu_layers;
  return c;
}

class CudaRuntimeWarmCold : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaRuntimeWarmCold, ExactAndPrefixHitsAreBitIdentical) {
  REQUIRE_CUDA0();
  const std::string path = reference_model(GetParam());
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " is absent";
  expect_hits_match_cold([&](bool caching) { return gpu_config(path, caching, -1); });
}

INSTANTIATE_TEST_SUITE_P(Models, CudaRuntimeWarmCold,
                         ::testing::Values("small-llama-q4_k_m.gguf", "small-qwen2-q4_k_m.gguf",
                                           "small-qwen3-f16.gguf"),
                         [](const auto& info) {
                           std::string n = std::filesystem::path(info.param).stem().string();
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(CudaRuntime, PartialOffloadWarmEqualsColdAndReportsTheSplit) {
  REQUIRE_CUDA0();
  const std::string path = reference_model("small-llama-q8_0.gguf");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " is absent";
  expect_hits_match_cold([&](bool caching) { return gpu_config(path, caching, 2); });
  auto rt = make_runtime();
  ASSERT_TRUE(rt->load_model(gpu_config(path, true, 2)).ok());
  auto models = rt->list_models();
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].n_gpu_layers, 2);
  EXPECT_EQ(models[0].device.rfind("cuda:0", 0), 0u) << models[0].device;
}

}  // namespace
}  // namespace hearth::runtime
