// The runtime knobs of a [[models]] table (issue #23 item 5): each key reaches
// runtime::ModelConfig, and an unknown or out-of-range value fails naming its key.
#include <gtest/gtest.h>

#include "hearth/server/server.h"
#include "server/model_settings.h"

namespace hearth::server {
namespace {

std::string error_of(const std::string& model_keys) {
  ServerConfig c;
  Status s = apply_config_toml("[[models]]\npath = \"m.gguf\"\n" + model_keys, c);
  return s.ok() ? "" : s.message();
}

TEST(KnobsConfig, EveryKnobReachesTheModelConfig) {
  ServerConfig c;
  Status s = apply_config_toml(R"(
[[models]]
path = "m.gguf"
threads = 3
n_batch = 256
prefill_chunk = 48
batch_strategy = "prefill_first"
fingerprint_mode = "fast_unsafe"
fingerprint = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
max_restarts = 7
restart_backoff_ms = 40
swa_full = true
session_idle_ms = 1234
draft_adaptive = false
draft_probe_interval = 32
policy = { min_tokens = 512, session_resume_wait_ms = 250, evict_save_timeout_ms = 9000, prefill_tokens_per_s = 90, write_bytes_per_s = 100000000 }
)",
                               c);
  ASSERT_TRUE(s.ok()) << s.to_string();
  ASSERT_EQ(c.models.size(), 1u);
  const runtime::ModelConfig& m = c.models[0];
  EXPECT_EQ(m.n_threads, 3);
  EXPECT_EQ(m.n_batch, 256);
  EXPECT_EQ(m.prefill_chunk_size, 48);
  ASSERT_TRUE(m.batch_planner);
  EXPECT_EQ(m.batch_planner->name(), "prefill_first");
  EXPECT_EQ(m.fingerprint_mode, runtime::FingerprintMode::kFastUnsafe);
  EXPECT_EQ(m.fingerprint_hex.size(), 64u);
  EXPECT_EQ(m.max_restarts, 7);
  EXPECT_EQ(m.restart_backoff_ms, 40);
  EXPECT_TRUE(m.swa_full);
  EXPECT_EQ(m.session_idle_ms, 1234);
  EXPECT_FALSE(m.speculative.adaptive);
  EXPECT_EQ(m.speculative.probe_interval, 32);
  EXPECT_EQ(m.policy.min_tokens, 512);
  EXPECT_EQ(m.policy.session_resume_wait_ms, 250);
  EXPECT_EQ(m.policy.evict_save_timeout_ms, 9000);
  EXPECT_EQ(m.policy.prefill_tokens_per_s, 90);
  EXPECT_EQ(m.policy.write_bytes_per_s, 100000000);
}

TEST(KnobsConfig, DefaultsAreTheCostRuleAndSharedThreads) {
  ServerConfig c;
  ASSERT_TRUE(apply_config_toml("[[models]]\npath = \"m.gguf\"\n", c).ok());
  EXPECT_EQ(c.models[0].n_threads, 0);  // resolved at load: cores / models
  EXPECT_EQ(c.models[0].policy.min_tokens, runtime::ModelSavePolicy::kCostRule);
  EXPECT_FALSE(c.models[0].batch_planner);  // decode_first
  EXPECT_FALSE(c.models[0].swa_full);       // sliding-window layers keep a ring
  EXPECT_TRUE(c.models[0].speculative.adaptive);
  EXPECT_EQ(c.models[0].speculative.probe_interval, 16);
}

TEST(KnobsConfig, BadValuesNameTheirKey) {
  const std::pair<std::string, std::string> cases[] = {
      {"threads = 257", "models[0].threads"},
      {"threads = \"4\"", "models[0].threads"},
      {"n_batch = 0", "models[0].n_batch"},
      {"n_batch = 2\nn_seq_max = 4", "models[0].n_batch"},
      {"prefill_chunk = -2", "models[0].prefill_chunk"},
      {"batch_strategy = \"fastest\"", "models[0].batch_strategy"},
      {"fingerprint_mode = \"sloppy\"", "models[0].fingerprint_mode"},
      {"fingerprint_mode = \"fast_unsafe\"", "models[0].fingerprint"},
      {"fingerprint = \"abc\"", "models[0].fingerprint"},
      {"max_restarts = -1", "models[0].max_restarts"},
      {"restart_backoff_ms = 600000", "models[0].restart_backoff_ms"},
      {"session_idle_ms = -1", "models[0].session_idle_ms"},
      {"policy = { evict_save_timeout_ms = -1 }", "policy.evict_save_timeout_ms"},
      {"policy = { write_bytes_per_s = 1.5 }", "policy.write_bytes_per_s"},
      {"policy = { rule = \"cost\" }", "policy.rule"},
      {"swa_full = 1", "models[0].swa_full"},
      {"swa_full = \"yes\"", "models[0].swa_full"},
      {"thread = 2", "models[0].thread"},
      {"draft_adaptive = 1", "models[0].draft_adaptive"},
      {"draft_probe_interval = 5000", "models[0].draft_probe_interval"},
  };
  for (const auto& [toml, key] : cases) {
    const std::string e = error_of(toml);
    EXPECT_NE(e.find(key), std::string::npos) << toml << " -> " << e;
  }
}

TEST(KnobsConfig, ServeFlagsUseTheSameParser) {
  runtime::ModelConfig m = default_model_config();
  EXPECT_TRUE(apply_model_setting(m, "batch_strategy", std::string("balanced")).ok());
  EXPECT_EQ(m.batch_planner->name(), "balanced");
  Status s = apply_model_setting(m, "threads", int64_t{-1});
  EXPECT_NE(s.message().find("threads"), std::string::npos);
}

}  // namespace
}  // namespace hearth::server
