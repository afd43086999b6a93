// The KV element types through the runtime: with Q8_0 and Q4_0 KV an exact hit (the row
// restored into another slot) and a longest-prefix hit give the cold run's tokens and
// logits bit for bit, as F16 does; and the KV type is part of the cache namespace (the
// backend's kv_layout names it and the rows shrink), so a row never crosses types.
#include <filesystem>
#include <string>
#include <utility>

#include "engine_warm_cold.h"
#include "runtime/engine_backend.h"

namespace hearth::runtime {
namespace {
using namespace testing;

ModelConfig kv_config(std::string id, const std::string& path, KvType kv_type, bool caching) {
  ModelConfig c = engine_config(std::move(id), path, /*n_seq_max=*/1, caching);
  c.kv_type = kv_type;
  return c;
}

class KvTypeWarmCold : public ::testing::TestWithParam<std::pair<const char*, KvType>> {};

TEST_P(KvTypeWarmCold, ExactAndPrefixHitsAreBitIdentical) {
  const std::string path = reference_model(GetParam().first);
  const KvType kv_type = GetParam().second;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " is absent";
  expect_hits_match_cold([&](bool caching) { return kv_config("m", path, kv_type, caching); });
}

INSTANTIATE_TEST_SUITE_P(KvTypes, KvTypeWarmCold,
                         ::testing::Values(std::pair{"small-llama-q4_0.gguf", KvType::kQ8_0},
                                           std::pair{"small-llama-q4_0.gguf", KvType::kQ4_0},
                                           std::pair{"small-gemma2-f16.gguf", KvType::kQ8_0},
                                           std::pair{"small-qwen3moe-q8_0.gguf", KvType::kQ4_0}),
                         [](const auto& info) {
                           std::string n = std::filesystem::path(info.param.first).stem().string() +
                                           "_" + kv_type_name(info.param.second);
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// Each KV type is its own namespace: the layouts differ (numerics names the type, the
// bytes per position shrink: Q8_0 34/64 and Q4_0 18/64 of F16's).
TEST(KvTypeNamespace, LayoutNamesTheTypeAndRowsShrink) {
  const std::string path = reference_model("small-llama-q4_0.gguf");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " is absent";
  std::string layouts[3];
  size_t bytes[3] = {};
  const KvType types[3] = {KvType::kF16, KvType::kQ8_0, KvType::kQ4_0};
  for (int i = 0; i < 3; ++i) {
    auto backend = engine_factory(kv_config("m", path, types[i], false))();
    ASSERT_TRUE(backend.ok()) << backend.status().to_string();
    layouts[i] = (*backend)->kv_identity().kv_layout;
    const size_t at = layouts[i].find("kv_bytes_per_pos=");
    ASSERT_NE(at, std::string::npos) << layouts[i];
    bytes[i] = std::stoul(layouts[i].substr(at + 17));
  }
  EXPECT_NE(layouts[0].find("kv=f16;"), std::string::npos) << layouts[0];
  EXPECT_NE(layouts[1].find("kv=q8_0;"), std::string::npos) << layouts[1];
  EXPECT_NE(layouts[2].find("kv=q4_0;"), std::string::npos) << layouts[2];
  EXPECT_EQ(bytes[1] * 64, bytes[0] * 34);
  EXPECT_EQ(bytes[2] * 64, bytes[0] * 18);
}

}  // namespace
}  // namespace hearth::runtime
