// `hearth plot` through the binary: rows of several files become one line per series
// (read back from the SVG by an independent XML parser), log axes leave off values <= 0,
// and every bad input exits non-zero with a message naming the file, row and key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "gguf_cli_util.h"
#include "svg_chart_reader.h"

namespace hearth::cli {
namespace {

using testing::read_svg_chart;
using testing::run_cli;
using testing::temp_path;

class PlotCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::cli_available()) GTEST_SKIP() << "SKIPPED: CLI not built";
    if (!testing::python3_available()) GTEST_SKIP() << "python3 is missing (make deps)";
  }
  void TearDown() override {
    for (const auto& p : created_) std::filesystem::remove(p);
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = temp_path(name);
    std::ofstream(path) << text;
    created_.push_back(path);
    return path;
  }
  std::string out_path(const std::string& name) {
    created_.push_back(temp_path(name));
    return created_.back();
  }
  std::vector<std::string> created_;
};

TEST_F(PlotCli, DrawsALinePerSeriesValueFromSeveralFiles) {
  // A bench's --json shape and a medians file of the comparison scripts, merged.
  const std::string h = write("h.json", R"({"model": "m", "runs": [
    {"engine": "hearth", "streams": 1, "aggregate_tok_s": 10},
    {"engine": "hearth", "streams": 16, "aggregate_tok_s": 90},
    {"engine": "hearth", "streams": 4, "aggregate_tok_s": 35}]})");
  const std::string l = write("l.json", R"([
    {"engine": "llama.cpp", "streams": 1, "aggregate_tok_s": 9},
    {"engine": "llama.cpp", "streams": 4, "aggregate_tok_s": 20}])");
  const std::string svg = out_path("engines.svg");
  auto r = run_cli("plot --in '" + h + "' --in '" + l +
                   "' --x streams --y aggregate_tok_s --series engine --log-x --title 'Many "
                   "streams' --x-label 'concurrent streams' --out '" +
                   svg + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto chart = read_svg_chart(svg);
  ASSERT_TRUE(chart.ok) << chart.error;
  EXPECT_EQ(chart.title, "Many streams");
  ASSERT_EQ(chart.series.size(), 2u);
  const auto& hs = chart.series[0];
  const auto& ls = chart.series[1];
  EXPECT_EQ(hs.name, "hearth");
  EXPECT_EQ(ls.name, "llama.cpp");
  ASSERT_EQ(hs.line.size(), 3u);
  ASSERT_EQ(hs.markers.size(), 3u);
  ASSERT_EQ(ls.line.size(), 2u);
  // Drawn in x order (1, 4, 16 from rows 1, 16, 4); the higher value sits higher up.
  EXPECT_LT(hs.line[0].first, hs.line[1].first);
  EXPECT_LT(hs.line[1].first, hs.line[2].first);
  EXPECT_GT(hs.line[0].second, hs.line[1].second);
  EXPECT_GT(hs.line[1].second, hs.line[2].second);
  // A log x axis: 1 -> 4 and 4 -> 16 are the same distance.
  EXPECT_NEAR(hs.line[1].first - hs.line[0].first, hs.line[2].first - hs.line[1].first, 0.02);
  // Same x, same pixel column across files; hearth's 10 above llama.cpp's 9.
  EXPECT_DOUBLE_EQ(ls.line[0].first, hs.line[0].first);
  EXPECT_DOUBLE_EQ(ls.line[1].first, hs.line[1].first);
  EXPECT_LT(hs.line[0].second, ls.line[0].second);
  // The legend and the axis labels (defaults: the key).
  auto has = [&](const std::string& t) {
    return std::find(chart.texts.begin(), chart.texts.end(), t) != chart.texts.end();
  };
  EXPECT_TRUE(has("hearth"));
  EXPECT_TRUE(has("llama.cpp"));
  EXPECT_TRUE(has("concurrent streams (log)"));
  EXPECT_TRUE(has("aggregate_tok_s"));
}

TEST_F(PlotCli, WhereAndNoSeriesKeyMakeOneLineNamedAfterY) {
  const std::string f = write("w.json", R"({"runs": [
    {"mode": "decode", "streams": 1, "positions": 512, "aggregate_tok_s": 10},
    {"mode": "decode", "streams": 2, "positions": 512, "aggregate_tok_s": 18},
    {"mode": "mix", "streams": 4, "positions": 512, "aggregate_tok_s": 30},
    {"mode": "decode", "streams": 1, "positions": 4096, "aggregate_tok_s": 8}]})");
  const std::string svg = out_path("where.svg");
  auto r = run_cli("plot --in '" + f +
                   "' --x streams --y aggregate_tok_s --where mode=decode --where positions=512 "
                   "--out '" +
                   svg + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto chart = read_svg_chart(svg);
  ASSERT_TRUE(chart.ok) << chart.error;
  EXPECT_EQ(chart.title, "aggregate_tok_s by streams");
  ASSERT_EQ(chart.series.size(), 1u);
  EXPECT_EQ(chart.series[0].name, "aggregate_tok_s");
  EXPECT_EQ(chart.series[0].markers.size(), 2u);
}

TEST_F(PlotCli, LogAxesLeaveOffValuesAtOrBelowZero) {
  const std::string f = write("log.json", R"([
    {"depth": 0, "tg": 5, "fa": "on"}, {"depth": 512, "tg": 40, "fa": "on"},
    {"depth": 4096, "tg": 0, "fa": "on"}, {"depth": 32768, "tg": 20, "fa": "on"},
    {"depth": 512, "tg": 30, "fa": "off"}, {"depth": 4096, "tg": -1, "fa": "off"}])");
  const std::string svg = out_path("log.svg");
  auto r = run_cli("plot --in '" + f + "' --x depth --y tg --series fa --log-x --log-y --out '" +
                   svg + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("3 point(s)"), std::string::npos) << r.err;
  const auto chart = read_svg_chart(svg);
  ASSERT_TRUE(chart.ok) << chart.error;
  std::map<std::string, size_t> markers, line;
  for (const auto& s : chart.series) {
    markers[s.name] = s.markers.size();
    line[s.name] = s.line.size();
  }
  EXPECT_EQ(markers, (std::map<std::string, size_t>{{"on", 2}, {"off", 1}}));
  EXPECT_EQ(line, (std::map<std::string, size_t>{{"on", 2}, {"off", 0}}));  // one point: no line
  // The same rows on linear axes keep every point.
  const std::string lin = out_path("lin.svg");
  ASSERT_EQ(
      run_cli("plot --in '" + f + "' --x depth --y tg --series fa --out '" + lin + "'").exit_code,
      0);
  const auto all = read_svg_chart(lin);
  ASSERT_TRUE(all.ok) << all.error;
  ASSERT_EQ(all.series.size(), 2u);
  EXPECT_EQ(all.series[0].markers.size() + all.series[1].markers.size(), 6u);
}

TEST_F(PlotCli, BadInputFailsNamingTheFileRowAndKey) {
  const std::string good = write("good.json", R"([{"s": 1, "v": 2, "e": "a"}])");
  const std::string missing = write("missing.json", R"([{"s": 1, "v": 2}, {"v": 3}])");
  const std::string text = write("text.json", R"({"runs": [{"s": 1, "v": "fast"}]})");
  const std::string series = write("series.json", R"([{"s": 1, "v": 2, "e": [1]}])");
  const std::string notjson = write("notjson.json", "s,v\n1,2\n");
  const std::string empty = write("empty.json", R"({"runs": []})");
  const std::string other = write("other.json", R"({"results": [{"s": 1}]})");
  struct Case {
    std::string args;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {"--in '" + temp_path("absent.json") + "' --x s --y v", {"absent.json", "cannot read"}},
      {"--in '" + notjson + "' --x s --y v", {"notjson.json", "not JSON"}},
      {"--in '" + empty + "' --x s --y v", {"empty.json: runs", "no rows"}},
      {"--in '" + other + "' --x s --y v", {"other.json", "'runs'"}},
      {"--in '" + good + "' --in '" + missing + "' --x s --y v",
       {"missing.json[1]", "no 's'", "--x"}},
      {"--in '" + text + "' --x s --y v", {"text.json: runs[0]", "'v'", "--y", "not a number"}},
      {"--in '" + series + "' --x s --y v --series e", {"series.json[0]", "'e'", "--series"}},
      {"--in '" + good + "' --x s --y v --where e=b", {"no row matches", "e=b"}},
      {"--in '" + good + "' --x s --y v --where e", {"--where 'e'", "KEY=VALUE"}},
  };
  for (const auto& c : cases) {
    const std::string svg = out_path("bad.svg");
    auto r = run_cli("plot " + c.args + " --out '" + svg + "'");
    EXPECT_NE(r.exit_code, 0) << c.args;
    for (const auto& s : c.says) EXPECT_NE(r.err.find(s), std::string::npos) << s << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(svg)) << c.args;
  }
  auto r = run_cli("plot --in '" + good + "' --x s --y v --out /nonexistent-dir/x.svg");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("/nonexistent-dir/x.svg"), std::string::npos) << r.err;
  auto no_out = run_cli("plot --in '" + good + "' --x s --y v");
  EXPECT_NE(no_out.exit_code, 0);
  EXPECT_NE(no_out.err.find("--out"), std::string::npos) << no_out.err;
}

}  // namespace
}  // namespace hearth::cli
