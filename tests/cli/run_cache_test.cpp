// `hearth run --cache-dir`: the second identical run restores its prompt from the disk
// tier (and says so), and produces the same text as the cold run.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "gguf_cli_util.h"

namespace hearth::cli {
namespace {

using testing::run_cli;

TEST(RunCli, CacheDirMakesTheSecondRunWarm) {
  const std::string model = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";
  if (!testing::cli_available()) GTEST_SKIP() << "SKIPPED: CLI not built";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "SKIPPED: " << model << " absent";
  const auto dir =
      std::filesystem::temp_directory_path() / ("hearth-cli-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string cmd = "run --json --temp 0 -n 24 -t 1 -m '" + model +
                          "' -p 'Once upon a time there was a little' --cache-dir '" +
                          dir.string() + "'";

  auto first = run_cli(cmd);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto j1 = nlohmann::json::parse(first.out, nullptr, false);
  ASSERT_FALSE(j1.is_discarded()) << first.out;
  EXPECT_EQ(j1["cache_hit_kind"], "cold");
  EXPECT_EQ(j1["cached_tokens"], 0);
  ASSERT_TRUE(j1["timings"].contains("prefill_ms"));
  ASSERT_TRUE(j1["timings"].contains("generation_ms"));
  ASSERT_TRUE(j1["timings"].contains("ttft_ms"));
  ASSERT_FALSE(j1["text"].get<std::string>().empty());

  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // The finish save was published before the first process exited.
  size_t files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    files += e.is_regular_file() ? 1 : 0;
  EXPECT_GT(files, 0u);

  auto second = run_cli(cmd);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  auto j2 = nlohmann::json::parse(second.out, nullptr, false);
  ASSERT_FALSE(j2.is_discarded()) << second.out;
  EXPECT_NE(j2["cache_hit_kind"], "cold");
  EXPECT_GT(j2["cached_tokens"].get<int64_t>(), 0);
  EXPECT_EQ(j2["text"], j1["text"]);
  EXPECT_EQ(j2["tokens"], j1["tokens"]);

  // Without --cache-dir the plain engine path still answers the same greedy text.
  auto plain = run_cli("run --json --temp 0 -n 24 -t 1 -m '" + model +
                       "' -p 'Once upon a time there was a little'");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  auto j3 = nlohmann::json::parse(plain.out, nullptr, false);
  EXPECT_FALSE(j3.contains("cache_hit_kind"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hearth::cli
