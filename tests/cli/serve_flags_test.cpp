// `hearth serve --ctx-size / --kv-budget`: applied to each -m model through the
// [[models]] keys' parser; a bad value, flags with no -m model, and an explicit
// context whose KV exceeds the budget are errors naming them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gguf_cli_util.h"

namespace hearth::cli {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::run_cli;

const std::string kModel =
    std::string(HEARTH_SHARED_DIR) + "/reference/architectures/models/small-qwen3-f16.gguf";

class ServeFlags : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::cli_available()) GTEST_SKIP() << "SKIPPED: CLI not built at " << HEARTH_CLI_PATH;
  }
};

TEST_F(ServeFlags, BadValuesAreRefusedNamingTheFlag) {
  auto r = run_cli("serve -m " + kModel + " --kv-budget lots --port 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--kv-budget"));
  auto r2 = run_cli("serve -m " + kModel + " --ctx-size -5 --port 0");
  EXPECT_EQ(r2.exit_code, 2);
  EXPECT_THAT(r2.err, HasSubstr("--ctx-size"));
  auto r3 = run_cli("serve --ctx-size 1024 --port 0");
  EXPECT_EQ(r3.exit_code, 2);
  EXPECT_THAT(r3.err, HasSubstr("apply to -m models"));
}

// The runtime knobs' flags (--threads, --batch-size, --prefill-chunk, --batch-strategy,
// --fingerprint-mode) go through the same parser: a bad value names the flag and the key.
TEST_F(ServeFlags, KnobFlagsNameTheFlagAndTheKey) {
  const std::pair<std::string, std::string> cases[] = {
      {"--threads 300", "--threads: threads"},
      {"--batch-size 0", "--batch-size: n_batch"},
      {"--batch-size 2 --parallel 4", "--batch-size"},
      {"--prefill-chunk -3", "--prefill-chunk: prefill_chunk"},
      {"--batch-strategy fastest", "--batch-strategy: batch_strategy"},
      {"--fingerprint-mode sloppy", "--fingerprint-mode: fingerprint_mode"},
      {"--session-idle-ms -5", "--session-idle-ms: session_idle_ms"},
      {"--draft-max 0", "--draft-max: draft_max"},
      {"--draft-min 999", "--draft-min: draft_min"},
      {"--speculative medusa", "--speculative: speculative"},
      {"--weights mmap", "--weights: weights"},
  };
  for (const auto& [flags, expected] : cases) {
    auto r = run_cli("serve -m " + kModel + " " + flags + " --port 0");
    EXPECT_EQ(r.exit_code, 2) << flags;
    EXPECT_THAT(r.err, HasSubstr(expected)) << flags;
  }
  for (const char* flag : {"--threads 2", "--swa-full", "--weights mapped"}) {
    auto r = run_cli(std::string("serve ") + flag + " --port 0");
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_THAT(r.err, HasSubstr("apply to -m models")) << flag;
  }
}

// small-qwen3-f16 holds 1 KiB of KV per position per sequence; 4 sequences + the
// engine's embedding one at 1024 positions need 5 MiB.
TEST_F(ServeFlags, AnExplicitContextOverTheBudgetFailsTheStart) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "SKIPPED: " << kModel << " is absent";
  auto r = run_cli("serve -m " + kModel + " --ctx-size 1024 --kv-budget 4MiB --port 0");
  EXPECT_EQ(r.exit_code, 1);  // the service cannot start
  EXPECT_THAT(r.err, AllOf(HasSubstr("context 1024"), HasSubstr("kv_budget 4 MiB")));
}

}  // namespace
}  // namespace hearth::cli
