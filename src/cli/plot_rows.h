// Benchmark JSON rows turned into line-chart series (cli/svg_plot.h draws them): the
// rows `hearth plot` reads from files, and those a bench hands over itself (`bench batch
// --plot`). A row is one JSON object; x and y are two of its numeric keys, and rows are
// grouped into one series per distinct value of a third key.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "cli/svg_plot.h"
#include "hearth/status.h"

namespace hearth::cli {

struct PlotRow {
  nlohmann::json value;  // an object
  std::string origin;    // where it came from, for messages: "a.json: runs[3]"
};

struct PlotRowsSpec {
  std::string x;       // numeric key of the x value
  std::string y;       // numeric key of the y value
  std::string series;  // one series per distinct value (string, number or bool) of this key;
                       // empty: one series, named after `y`
  // Only the rows whose KEY equals VALUE (a string equal to it, a number equal to it read
  // as a number, a bool spelled true / false), every pair holding.
  std::vector<std::pair<std::string, std::string>> where;
};

// The rows of one JSON file: a JSON array of objects, or an object holding such an
// array under "runs" (what the benches print with --json). The error names the path and,
// for a bad row, its index.
Result<std::vector<PlotRow>> load_plot_rows(const std::string& path);

// The rows of an in-memory array (each row's origin is `origin` + "[i]").
Result<std::vector<PlotRow>> plot_rows_of(const nlohmann::json& array, const std::string& origin);

// "KEY=VALUE" of a --where option; the error names the text.
Result<std::pair<std::string, std::string>> parse_plot_filter(const std::string& text);

// The series of `rows` under `spec`, in order of first appearance; a series named after a
// number or bool value reads "KEY=VALUE", after a string the string. Errors: no row passes
// the filters, or a row lacks a key or holds a value of the wrong kind (the message names
// the row's origin, the key and the option it came from).
Result<std::vector<PlotSeries>> plot_series_of(const std::vector<PlotRow>& rows,
                                               const PlotRowsSpec& spec);

}  // namespace hearth::cli
