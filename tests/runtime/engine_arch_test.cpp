// Warm == cold over the real engine for every architecture of the reference
// architecture set: an exact hit (the row restored into another slot after another
// request used it) and a longest-prefix hit give the cold run's tokens and logits bit
// for bit. The prompt is longer than gemma's 64-position sliding window, and MoE
// routing is recomputed for the new positions only.
#include <filesystem>

#include "engine_warm_cold.h"

namespace hearth::runtime {
namespace {
using namespace testing;

std::string arch_model(const std::string& file) {
  return std::string(HEARTH_SHARED_DIR) + "/reference/architectures/models/" + file;
}

ModelConfig arch_config(std::string id, const std::string& path, bool caching) {
  return engine_config(std::move(id), path, /*n_seq_max=*/1, caching);
}

class ArchWarmCold : public ::testing::TestWithParam<std::string> {};

TEST_P(ArchWarmCold, ExactAndPrefixHitsAreBitIdentical) {
  const std::string path = arch_model(GetParam());
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " is absent";
  expect_hits_match_cold([&](bool caching) { return arch_config("m", path, caching); });
}

INSTANTIATE_TEST_SUITE_P(Architectures, ArchWarmCold,
                         ::testing::Values("small-llama-hd48-q8_0.gguf", "small-qwen3-q4_k_m.gguf",
                                           "small-qwen3moe-q8_0.gguf", "small-mixtral-f16.gguf",
                                           "small-phi3-gqa-q8_0.gguf", "small-gemma2-f16.gguf",
                                           "small-gemma3-q8_0.gguf"),
                         [](const auto& info) {
                           std::string n = std::filesystem::path(info.param).stem().string();
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace hearth::runtime
