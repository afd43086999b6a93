// The benchmarks' SVG writer: values land on the right pixels (linear and log axes),
// ticks are round and inside the range, and the output is well-formed XML (checked by
// python3's XML parser, an independent reader) that escapes what it is given.
#include "cli/svg_plot.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>

namespace hearth::cli {
namespace {

TEST(SvgPlot, LinearAxisMapsEndsAndMiddle) {
  PlotAxis a;
  a.lo = 0;
  a.hi = 200;
  a.px_lo = 100;
  a.px_hi = 500;
  EXPECT_DOUBLE_EQ(a.map(0), 100);
  EXPECT_DOUBLE_EQ(a.map(200), 500);
  EXPECT_DOUBLE_EQ(a.map(50), 200);
  // A y axis runs downwards: the larger value has the smaller pixel.
  a.px_lo = 400;
  a.px_hi = 40;
  EXPECT_DOUBLE_EQ(a.map(0), 400);
  EXPECT_DOUBLE_EQ(a.map(100), 220);
}

TEST(SvgPlot, LogAxisSpacesDecadesEvenly) {
  PlotAxis a;
  a.lo = 0.1;
  a.hi = 1000;
  a.log = true;
  a.px_lo = 0;
  a.px_hi = 400;
  EXPECT_NEAR(a.map(0.1), 0, 1e-9);
  EXPECT_NEAR(a.map(1), 100, 1e-9);
  EXPECT_NEAR(a.map(10), 200, 1e-9);
  EXPECT_NEAR(a.map(1000), 400, 1e-9);
  EXPECT_NEAR(a.map(std::sqrt(10.0)), 150, 1e-9);
  const std::vector<double> want = {0.1, 1, 10, 100, 1000};
  const auto ticks = a.ticks();
  ASSERT_EQ(ticks.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(ticks[i], want[i], want[i] * 1e-9);
}

TEST(SvgPlot, FittedAxesHoldTheDataWithRoundTicks) {
  const PlotAxis lin = fit_axis({3, 17, 42}, false, 0, 100);
  EXPECT_LE(lin.lo, 3);
  EXPECT_GE(lin.hi, 42);
  EXPECT_EQ(lin.lo, 0);  // small positive data starts at zero
  const auto ticks = lin.ticks();
  ASSERT_GE(ticks.size(), 3u);
  const double step = ticks[1] - ticks[0];
  const double mag = std::pow(10.0, std::floor(std::log10(step)));
  const double m = step / mag;
  EXPECT_TRUE(std::fabs(m - 1) < 1e-9 || std::fabs(m - 2) < 1e-9 || std::fabs(m - 5) < 1e-9)
      << step;
  for (double t : ticks) {
    EXPECT_GE(t, lin.lo - 1e-9);
    EXPECT_LE(t, lin.hi + 1e-9);
  }
  const PlotAxis lg = fit_axis({0.37, 0, -5, 812}, true, 0, 100);  // <= 0 ignored
  EXPECT_DOUBLE_EQ(lg.lo, 0.1);
  EXPECT_DOUBLE_EQ(lg.hi, 1000);
  const PlotAxis flat = fit_axis({5, 5}, false, 0, 100);  // one value: still a range
  EXPECT_LT(flat.lo, flat.hi);
}

// The circles of a rendered chart, as (cx, cy) pixel pairs in document order.
std::vector<std::pair<double, double>> circles(const std::string& svg) {
  std::vector<std::pair<double, double>> out;
  const std::regex re("<circle cx=\"([0-9.]+)\" cy=\"([0-9.]+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    out.emplace_back(std::stod((*it)[1]), std::stod((*it)[2]));
  }
  return out;
}

TEST(SvgPlot, PointsLandWhereTheAxesPutThem) {
  PlotOptions o;
  o.log_y = true;
  PlotSeries s;
  s.name = "a";
  s.points = {{512, 1}, {2048, 100}, {1024, 10}};  // drawn in x order
  PlotSeries neg;
  neg.name = "b";
  neg.points = {{512, -3}, {1024, 0}};  // unplaceable on a log axis: dropped
  const std::string svg = render_svg_plot(o, {s, neg});
  const auto c = circles(svg);
  ASSERT_EQ(c.size(), 3u) << svg;
  // x: linear, left to right in order; y: log, one decade = the same pixel step.
  EXPECT_LT(c[0].first, c[1].first);
  EXPECT_LT(c[1].first, c[2].first);
  EXPECT_NEAR((c[1].first - c[0].first) * 2, c[2].first - c[1].first, 0.02);
  EXPECT_GT(c[0].second, c[1].second);  // larger y, higher up
  EXPECT_NEAR(c[0].second - c[1].second, c[1].second - c[2].second, 0.02);
  // The fitted axes, recomputed the same way, put the points on the same pixels.
  const PlotAxis ay = fit_axis({1, 100, 10}, true, o.height - 56.0, 44);
  EXPECT_NEAR(c[0].second, ay.map(1), 0.01);
  EXPECT_NEAR(c[2].second, ay.map(100), 0.01);
}

TEST(SvgPlot, OutputIsWellFormedXmlAndEscapesText) {
  if (std::system("command -v python3 >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 is missing (make deps installs it)";
  PlotOptions o;
  o.title = "a <b> & \"c\"";
  o.x_label = "x & y";
  o.y_label = "<y>";
  o.log_x = true;
  PlotSeries s1{"ram <fast>", {{1, 2.5}, {16, 3}, {64, 2.9}}, false, ""};
  PlotSeries s2{"memcpy & co", {{1, 9}, {64, 9}}, true, "#123456"};
  const std::string svg = render_svg_plot(o, {s1, s2});
  EXPECT_NE(svg.find("stroke=\"#123456\" stroke-width=\"2\" stroke-dasharray"), std::string::npos);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("hearth-svg-" + std::to_string(getpid()) + ".svg"))
          .string();
  ASSERT_TRUE(write_svg_plot(path, o, {s1, s2}).ok());
  // Parses the file and prints the root tag, the title and the series names.
  const std::string cmd =
      "python3 -c \"import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
      "ns = '{http://www.w3.org/2000/svg}'; print(r.tag); print(r.find(ns + 'title').text); "
      "print('|'.join(g.get('data-name') for g in r.iter(ns + 'g') if g.get('class') == "
      "'series'))\" '" +
      path + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof(buf), p)) out += buf;
  EXPECT_EQ(pclose(p), 0) << out;
  EXPECT_EQ(out, "{http://www.w3.org/2000/svg}svg\na <b> & \"c\"\nram <fast>|memcpy & co\n");
  std::filesystem::remove(path);
  EXPECT_FALSE(write_svg_plot("/nonexistent-dir/x.svg", o, {s1}).ok());
}

}  // namespace
}  // namespace hearth::cli
