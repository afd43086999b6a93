// `hearth bench batch`: the decode runs cover every (streams, positions) asked with
// consistent figures, the mix run goes through the runtime and times the admitted
// prompt, and bad arguments fail naming the option.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "gguf_cli_util.h"
#include "svg_chart_reader.h"

namespace hearth::cli {
namespace {

using testing::run_cli;

std::string model_path() {
  return std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";
}

TEST(BenchBatchCli, JsonHasARunPerStreamsAndPositionsAndAMixRun) {
  if (!testing::cli_available()) GTEST_SKIP() << "SKIPPED: CLI not built";
  if (!std::filesystem::exists(model_path())) GTEST_SKIP() << "SKIPPED: model absent";
  auto r = run_cli("bench batch -q --json -t 1 -m '" + model_path() +
                   "' --streams 1,3 --positions 8,40 --gen 4 --reps 1 --mix-streams 2"
                   " --mix-positions 16 --mix-prompt 24");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["n_seq_max"], 3);
  EXPECT_GE(j["n_ctx"].get<int>(), 44);
  // KV for every stream (and the engine's private sequence) is committed at load.
  EXPECT_GE(j["kv_bytes"].get<uint64_t>(), j["kv_bytes_per_position"].get<uint64_t>() * 44 * 3);
  std::set<std::pair<int, int>> seen;
  int mix = 0;
  for (const auto& run : j["runs"]) {
    if (run["mode"] == "mix") {
      ++mix;
      EXPECT_EQ(run["streams"], 2);
      EXPECT_EQ(run["positions"], 16);
      EXPECT_EQ(run["admitted_prompt"], 24);
      EXPECT_GT(run["aggregate_tok_s"].get<double>(), 0);
      EXPECT_GT(run["admitted_ttft_ms"].get<double>(), 0);
      continue;
    }
    ASSERT_EQ(run["mode"], "decode");
    const int s = run["streams"], p = run["positions"];
    seen.insert({s, p});
    const double agg = run["aggregate_tok_s"], per = run["per_stream_tok_s"];
    EXPECT_GT(agg, 0);
    EXPECT_DOUBLE_EQ(per * s, agg);
    EXPECT_NEAR(run["step_ms"].get<double>(), 1000.0 * s / agg,
                1e-6 * run["step_ms"].get<double>());
  }
  EXPECT_EQ(mix, 1);
  EXPECT_EQ(seen, (std::set<std::pair<int, int>>{{1, 8}, {3, 8}, {1, 40}, {3, 40}}));
}

// --plot: aggregate tokens/s by streams, one line per --positions value with a point per
// --streams value; the mix run (mode "mix") is not drawn.
TEST(BenchBatchCli, PlotDrawsALinePerPositionsValue) {
  if (!testing::cli_available()) GTEST_SKIP() << "SKIPPED: CLI not built";
  if (!testing::python3_available()) GTEST_SKIP() << "python3 is missing (make deps)";
  if (!std::filesystem::exists(model_path())) GTEST_SKIP() << "SKIPPED: model absent";
  const std::string svg = testing::temp_path("batch.svg");
  auto r = run_cli("bench batch -q --json -t 1 -m '" + model_path() +
                   "' --streams 1,2,4 --positions 8,24 --gen 2 --reps 1 --mix-streams 3"
                   " --mix-positions 8 --mix-prompt 8 --plot '" +
                   svg + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  const auto chart = testing::read_svg_chart(svg);
  std::filesystem::remove(svg);
  ASSERT_TRUE(chart.ok) << chart.error;
  ASSERT_EQ(chart.series.size(), 2u);
  EXPECT_EQ(chart.series[0].name, "positions=8");
  EXPECT_EQ(chart.series[1].name, "positions=24");
  for (const auto& s : chart.series) {
    ASSERT_EQ(s.line.size(), 3u) << s.name;  // streams 1, 2, 4; not the mix run's 3
    EXPECT_EQ(s.markers.size(), 3u) << s.name;
    // Log x: 1 -> 2 and 2 -> 4 are the same distance.
    EXPECT_NEAR(s.line[1].first - s.line[0].first, s.line[2].first - s.line[1].first, 0.02);
    EXPECT_NE(std::find(chart.texts.begin(), chart.texts.end(), s.name), chart.texts.end());
  }
  // Each line's heights follow the JSON's aggregate_tok_s of its runs (higher is smaller y).
  for (size_t i = 0; i < 2; ++i) {
    std::vector<double> agg;
    for (const auto& run : j["runs"])
      if (run["mode"] == "decode" && run["positions"] == (i == 0 ? 8 : 24))
        agg.push_back(run["aggregate_tok_s"].get<double>());
    ASSERT_EQ(agg.size(), 3u);
    const auto& line = chart.series[i].line;
    for (size_t a = 0; a < 3; ++a) {
      for (size_t b = 0; b < 3; ++b) {
        if (agg[a] > agg[b]) {
          EXPECT_LT(line[a].second, line[b].second);
        }
      }
    }
  }
  auto bad = run_cli("bench batch -q -t 1 -m '" + model_path() +
                     "' --streams 1 --positions 8 --gen 1 --reps 1 --mix-streams 0 --plot "
                     "/nonexistent-dir/b.svg");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--plot"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("/nonexistent-dir/b.svg"), std::string::npos) << bad.err;
}

TEST(BenchBatchCli, RejectsAnUnknownStrategyAndZeroStreams) {
  if (!testing::cli_available()) GTEST_SKIP() << "SKIPPED: CLI not built";
  auto bad = run_cli("bench batch -m x.gguf --strategy sideways");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--strategy"), std::string::npos) << bad.err;
  auto zero = run_cli("bench batch -m x.gguf --streams 0");
  EXPECT_NE(zero.exit_code, 0);
  EXPECT_NE(zero.err.find("--streams"), std::string::npos) << zero.err;
}

}  // namespace
}  // namespace hearth::cli
