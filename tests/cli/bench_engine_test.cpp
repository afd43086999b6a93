// `hearth bench engine` sizes: the decode prompt and the prefill sizes go up to the
// context (grown past the 4096 default when they need it), a size beyond an explicit
// --ctx is an error naming the flags, and --kv-fill reports the prefill it repeated.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gguf_cli_util.h"

namespace hearth::cli {
namespace {

using ::testing::HasSubstr;
using testing::run_cli;

class BenchEngine : public testing::GenModelTest {};

constexpr const char* kQuick = " -t 1 --prompts 8 --gen 4 --reps 1 -q --json";

TEST_F(BenchEngine, DecodeAfterMoreThan4096AndKvFill) {
  const std::string m = gen("--preset tiny --ctx 8192 --seed 3", "bench_tiny.gguf");
  auto r = run_cli("bench engine -m " + m + kQuick + " --gen-after 5000 --kv-fill 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tg4_prompt_tokens"], 5000);
  EXPECT_EQ(j["tg4_kv_fill"], 16);
  EXPECT_GE(j["n_ctx"].get<int>(), 5004);  // grown past the default 4096
  EXPECT_GT(j["tg4"].get<double>(), 0.0);
  // A full prefill of the prompt: no kv_fill key.
  auto full = run_cli("bench engine -m " + m + kQuick + " --gen-after 300");
  ASSERT_EQ(full.exit_code, 0) << full.err;
  const auto jf = nlohmann::json::parse(full.out);
  EXPECT_EQ(jf["tg4_prompt_tokens"], 300);
  EXPECT_FALSE(jf.contains("tg4_kv_fill"));
}

TEST_F(BenchEngine, SizesBeyondTheContextAreErrors) {
  const std::string m = gen("--preset tiny --seed 3", "bench_tiny2.gguf");
  auto r = run_cli("bench engine -m " + m + kQuick + " --ctx 128 --gen-after 200");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--gen-after 200"));
  EXPECT_THAT(r.err, HasSubstr("context of 128"));
  auto p = run_cli("bench engine -m " + m + " -t 1 --prompts 300 --gen 0 --ctx 256 -q --json");
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_THAT(p.err, HasSubstr("--prompts 300 needs 300 positions"));
}

TEST_F(BenchEngine, The32kPresetIsListed) {
  auto h = run_cli("gen-model --help");
  EXPECT_THAT(h.out, HasSubstr("llama/tinyllama-1.1b-32k"));
}

}  // namespace
}  // namespace hearth::cli
