// `hearth bench rows` end to end on stories260K: one JSON run per (depth, size) in depth
// then size order, each timed, the 1-token pass the unit of vs_one; bad sizes refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "gen_model_test_util.h"

namespace hearth {
namespace {

std::string stories_or_empty() {
  const std::string model = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";
  return std::filesystem::exists(model) ? model : std::string();
}

TEST(BenchRowsCli, ReportsEveryDepthAndSizeAgainstTheOneTokenPass) {
  if (!testing::cli_built()) GTEST_SKIP() << "SKIPPED: hearth binary not built at " HEARTH_CLI_PATH;
  const std::string model = stories_or_empty();
  if (model.empty()) GTEST_SKIP() << "SKIPPED: stories260K.gguf not present";
  int rc = 0;
  const std::string cmd = std::string(HEARTH_CLI_PATH) + " bench rows -m '" + model +
                          "' --sizes 1,3,9 --depths 40,0 --reps 2 --threads 1 --json 2>/dev/null";
  const std::string out = testing::run_command(cmd, &rc);
  ASSERT_EQ(rc, 0) << cmd << "\n" << out;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["threads"], 1);
  EXPECT_FALSE(j["numerics_id"].get<std::string>().empty());
  const auto& runs = j["runs"];
  ASSERT_EQ(runs.size(), 6u) << out;
  const int depths[] = {0, 0, 0, 40, 40, 40}, sizes[] = {1, 3, 9, 1, 3, 9};
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    EXPECT_EQ(r["depth"], depths[i]) << r.dump();
    EXPECT_EQ(r["tokens"], sizes[i]) << r.dump();
    EXPECT_GT(r["ms"].get<double>(), 0.0) << r.dump();
    EXPECT_GE(r["cpu_ms"].get<double>(), 0.0) << r.dump();
    EXPECT_DOUBLE_EQ(r["ms_per_token"].get<double>(), r["ms"].get<double>() / sizes[i]);
    const double one = runs[i / 3 * 3]["ms"].get<double>();
    EXPECT_DOUBLE_EQ(r["vs_one"].get<double>(), r["ms"].get<double>() / one) << r.dump();
  }
}

TEST(BenchRowsCli, RefusesAnEmptyPass) {
  if (!testing::cli_built()) GTEST_SKIP() << "SKIPPED: hearth binary not built at " HEARTH_CLI_PATH;
  const std::string model = stories_or_empty();
  if (model.empty()) GTEST_SKIP() << "SKIPPED: stories260K.gguf not present";
  int rc = 0;
  const std::string cmd =
      std::string(HEARTH_CLI_PATH) + " bench rows -m '" + model + "' --sizes 0 2>&1";
  const std::string out = testing::run_command(cmd, &rc);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("--sizes"), std::string::npos) << out;
}

}  // namespace
}  // namespace hearth
