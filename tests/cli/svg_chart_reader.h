// Reads back a chart written by cli/svg_plot with python3's XML parser (a reader
// independent of the writer): per series its name, the points of its polyline and its
// markers; the legend's texts and the title. For the tests of the charts' contents.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace hearth::cli::testing {

struct SvgSeries {
  std::string name;                                // the group's data-name
  std::vector<std::pair<double, double>> line;     // polyline points (pixels)
  std::vector<std::pair<double, double>> markers;  // circles (pixels)
};

struct SvgChart {
  bool ok = false;
  std::string error;  // python3's output when !ok
  std::string title;
  std::vector<SvgSeries> series;
  std::vector<std::string> texts;  // every <text> element's text, in document order
};

inline bool python3_available() {
  return std::system("command -v python3 >/dev/null 2>&1") == 0;
}

inline SvgChart read_svg_chart(const std::string& path) {
  static const char* kScript =
      "import json, sys, xml.etree.ElementTree as E\n"
      "ns = '{http://www.w3.org/2000/svg}'\n"
      "r = E.parse(sys.argv[1]).getroot()\n"
      "out = {'title': r.find(ns + 'title').text or '', 'series': [],\n"
      "       'texts': [t.text or '' for t in r.iter(ns + 'text')]}\n"
      "for g in r.iter(ns + 'g'):\n"
      "    if g.get('class') != 'series': continue\n"
      "    line = [[float(v) for v in p.split(',')] for pl in g.iter(ns + 'polyline')\n"
      "            for p in pl.get('points').split()]\n"
      "    marks = [[float(c.get('cx')), float(c.get('cy'))] for c in g.iter(ns + 'circle')]\n"
      "    out['series'].append({'name': g.get('data-name'), 'line': line, 'markers': marks})\n"
      "print(json.dumps(out))\n";
  SvgChart chart;
  const std::string cmd = "python3 -c \"$HEARTH_SVG_READER\" '" + path + "' 2>&1";
  setenv("HEARTH_SVG_READER", kScript, 1);
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return chart;
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) text.append(buf, n);
  const int rc = pclose(p);
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (rc != 0 || j.is_discarded()) {
    chart.error = text;
    return chart;
  }
  chart.ok = true;
  chart.title = j["title"].get<std::string>();
  chart.texts = j["texts"].get<std::vector<std::string>>();
  for (const auto& s : j["series"]) {
    SvgSeries out;
    out.name = s["name"].get<std::string>();
    for (const auto& pt : s["line"])
      out.line.emplace_back(pt[0].get<double>(), pt[1].get<double>());
    for (const auto& pt : s["markers"])
      out.markers.emplace_back(pt[0].get<double>(), pt[1].get<double>());
    chart.series.push_back(std::move(out));
  }
  return chart;
}

}  // namespace hearth::cli::testing
