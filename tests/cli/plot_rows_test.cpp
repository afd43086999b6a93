// The rows `hearth plot` draws: files of either shape load with each row's origin, rows
// group into series by a key's value (string, number, bool), --where keeps the matching
// rows, and every bad input fails with a message naming the file, row and key.
#include "cli/plot_rows.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

namespace hearth::cli {
namespace {

using nlohmann::json;

std::vector<PlotRow> rows_of(const json& array) {
  auto r = plot_rows_of(array, "t");
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? r.value() : std::vector<PlotRow>{};
}

// The error message of a failed result; "" (and a test failure) when it succeeded.
template <typename T>
std::string error_of(const Result<T>& r) {
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.status().message();
}

void expect_has(const std::string& text, const std::vector<std::string>& parts) {
  for (const auto& p : parts) EXPECT_NE(text.find(p), std::string::npos) << p << " in: " << text;
}

TEST(PlotRows, GroupsRowsBySeriesValueInOrderOfFirstAppearance) {
  const auto rows = rows_of(json::parse(R"([
    {"engine": "llama.cpp", "streams": 1, "tok_s": 9},
    {"engine": "hearth", "streams": 1, "tok_s": 10},
    {"engine": "hearth", "streams": 8, "tok_s": 52.5},
    {"engine": "llama.cpp", "streams": 8, "tok_s": 31}])"));
  auto s = plot_series_of(rows, {"streams", "tok_s", "engine", {}});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].name, "llama.cpp");
  EXPECT_EQ((*s)[0].points, (std::vector<std::pair<double, double>>{{1, 9}, {8, 31}}));
  EXPECT_EQ((*s)[1].name, "hearth");
  EXPECT_EQ((*s)[1].points, (std::vector<std::pair<double, double>>{{1, 10}, {8, 52.5}}));
}

TEST(PlotRows, NumberAndBoolSeriesNamesCarryTheKey) {
  const auto rows = rows_of(json::parse(R"([
    {"positions": 512, "s": 1, "v": 1}, {"positions": 4096, "s": 1, "v": 2},
    {"positions": 512.0, "s": 2, "v": 3}, {"positions": 0.5, "s": 2, "v": 4},
    {"positions": true, "s": 3, "v": 5}])"));
  auto s = plot_series_of(rows, {"s", "v", "positions", {}});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ(s->size(), 4u);
  EXPECT_EQ((*s)[0].name, "positions=512");
  EXPECT_EQ((*s)[0].points.size(), 2u);  // 512 and 512.0 are one value
  EXPECT_EQ((*s)[1].name, "positions=4096");
  EXPECT_EQ((*s)[2].name, "positions=0.5");
  EXPECT_EQ((*s)[3].name, "positions=true");
}

TEST(PlotRows, WithoutASeriesKeyOneSeriesNamedAfterY) {
  const auto rows = rows_of(json::parse(R"([{"d": 1, "tg": 5, "e": "a"}, {"d": 2, "tg": 6}])"));
  auto s = plot_series_of(rows, {"d", "tg", "", {}});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ(s->size(), 1u);
  EXPECT_EQ((*s)[0].name, "tg");
  EXPECT_EQ((*s)[0].points.size(), 2u);
}

TEST(PlotRows, WhereKeepsRowsMatchingAsStringNumberOrBool) {
  const auto rows = rows_of(json::parse(R"([
    {"mode": "decode", "fa": true, "p": 512, "x": 1, "y": 1},
    {"mode": "decode", "fa": false, "p": 512, "x": 2, "y": 2},
    {"mode": "mix", "fa": true, "p": 512, "x": 3, "y": 3},
    {"mode": "decode", "fa": true, "p": 4096, "x": 4, "y": 4},
    {"fa": true, "p": 512, "x": 5, "y": "not read: filtered out"}])"));
  auto s =
      plot_series_of(rows, {"x", "y", "", {{"mode", "decode"}, {"fa", "true"}, {"p", "512.0"}}});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ(s->size(), 1u);
  EXPECT_EQ((*s)[0].points, (std::vector<std::pair<double, double>>{{1, 1}}));
  expect_has(error_of(plot_series_of(rows, {"x", "y", "", {{"mode", "prefill"}}})),
             {"no row matches", "--where mode=prefill"});
  auto f = parse_plot_filter("engine=llama.cpp fa=on");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->first, "engine");
  EXPECT_EQ(f->second, "llama.cpp fa=on");
  expect_has(error_of(parse_plot_filter("engine")), {"--where 'engine'", "KEY=VALUE"});
  expect_has(error_of(parse_plot_filter("=x")), {"--where '=x'"});
}

TEST(PlotRows, BadRowsNameTheRowTheKeyAndTheOption) {
  const auto rows = rows_of(json::parse(R"([
    {"s": 1, "v": 2, "e": "a"}, {"v": 3, "e": "a"}, {"s": 2, "v": "fast", "e": "a"},
    {"s": 3, "v": 4, "e": {"k": 1}}, {"s": 4, "v": 5}])"));
  // Each bad row alone, after a good one.
  auto only = [&](size_t i) { return std::vector<PlotRow>{rows[0], rows[i]}; };
  expect_has(error_of(plot_series_of(only(1), {"s", "v", "e", {}})), {"t[1]", "'s'", "--x"});
  expect_has(error_of(plot_series_of(only(2), {"s", "v", "e", {}})),
             {"t[2]", "'v'", "--y", "\"fast\"", "not a number"});
  expect_has(error_of(plot_series_of(only(3), {"s", "v", "e", {}})),
             {"t[3]", "'e'", "--series", "an object"});
  expect_has(error_of(plot_series_of(only(4), {"s", "v", "e", {}})), {"t[4]", "'e'", "--series"});
  expect_has(error_of(plot_series_of({}, {"s", "v", "", {}})), {"no rows"});
  expect_has(error_of(plot_rows_of(json::parse(R"([{"a": 1}, 7])"), "f.json")),
             {"f.json[1]", "a number", "not an object"});
  expect_has(error_of(plot_rows_of(json::array(), "f.json")), {"f.json", "no rows"});
}

class PlotRowsFile : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::filesystem::create_directories(dir_);
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_ =
      (std::filesystem::temp_directory_path() / ("hearth-plot-rows-" + std::to_string(getpid())))
          .string();
};

TEST_F(PlotRowsFile, LoadsAnArrayOrABenchsRunsWithTheirOrigins) {
  const std::string a = write("a.json", R"([{"x": 1}, {"x": 2}])");
  auto ra = load_plot_rows(a);
  ASSERT_TRUE(ra.ok()) << ra.status().to_string();
  ASSERT_EQ(ra->size(), 2u);
  EXPECT_EQ((*ra)[1].origin, a + "[1]");
  EXPECT_EQ((*ra)[1].value["x"], 2);
  const std::string b = write("b.json", R"({"model": "m", "runs": [{"x": 5}]})");
  auto rb = load_plot_rows(b);
  ASSERT_TRUE(rb.ok()) << rb.status().to_string();
  ASSERT_EQ(rb->size(), 1u);
  EXPECT_EQ((*rb)[0].origin, b + ": runs[0]");
}

TEST_F(PlotRowsFile, BadFilesNameThePathAndWhatIsWrong) {
  expect_has(error_of(load_plot_rows(dir_ + "/absent.json")), {"absent.json", "cannot read"});
  write("x", "");
  expect_has(error_of(load_plot_rows(dir_)), {dir_, "directory"});
  expect_has(error_of(load_plot_rows(write("n.json", "{\"runs\": [1,"))), {"n.json", "not JSON"});
  expect_has(error_of(load_plot_rows(write("e.json", ""))), {"e.json", "not JSON"});
  expect_has(error_of(load_plot_rows(write("o.json", R"({"rows": []})"))),
             {"o.json", "an object", "'runs'"});
  expect_has(error_of(load_plot_rows(write("r.json", R"({"runs": {"x": 1}})"))),
             {"r.json: runs", "not an array"});
  expect_has(error_of(load_plot_rows(write("z.json", "[]"))), {"z.json", "no rows"});
  expect_has(error_of(load_plot_rows(write("s.json", R"([{"x": 1}, "row"])"))),
             {"s.json[1]", "a string", "not an object"});
}

}  // namespace
}  // namespace hearth::cli
