#include "cli/plot_rows.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/json_text.h"

namespace hearth::cli {
namespace {

const char* kind_of(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a bool";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

// A value as a message shows it: short JSON text.
std::string shown(const nlohmann::json& v) {
  std::string text = json_text(v);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

// A series value in a legend: integers without a fraction (512 and 512.0 are one series).
std::string value_text(const nlohmann::json& v) {
  if (v.is_number()) {
    const double d = v.get<double>();
    char buf[32];
    std::snprintf(buf, sizeof(buf), d == std::floor(d) && std::fabs(d) < 1e15 ? "%.0f" : "%.9g", d);
    return buf;
  }
  return json_text(v);
}

bool matches(const nlohmann::json& v, const std::string& want) {
  if (v.is_string()) return v.get<std::string>() == want;
  if (v.is_boolean()) return (v.get<bool>() ? "true" : "false") == want;
  if (v.is_number()) {
    char* end = nullptr;
    const double d = std::strtod(want.c_str(), &end);
    return !want.empty() && end != nullptr && *end == '\0' && d == v.get<double>();
  }
  return false;
}

// The numeric value of row[key], `option` naming where the key came from (--x, --y).
Result<double> number_at(const PlotRow& row, const std::string& key, const char* option) {
  auto it = row.value.find(key);
  if (it == row.value.end())
    return InvalidArgument(row.origin + " has no '" + key + "' (" + option + ")");
  if (!it->is_number())
    return InvalidArgument(row.origin + ": '" + key + "' (" + option + ") is " + kind_of(*it) +
                           " " + shown(*it) + ", not a number");
  return it->get<double>();
}

// The legend name of a row's series value.
Result<std::string> series_name(const PlotRow& row, const std::string& key) {
  auto it = row.value.find(key);
  if (it == row.value.end())
    return InvalidArgument(row.origin + " has no '" + key + "' (--series)");
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number() || it->is_boolean()) return key + "=" + value_text(*it);
  return InvalidArgument(row.origin + ": '" + key + "' (--series) is " + kind_of(*it) +
                         ", not a string, number or bool");
}

}  // namespace

Result<std::vector<PlotRow>> plot_rows_of(const nlohmann::json& array, const std::string& origin) {
  if (!array.is_array())
    return InvalidArgument(origin + " is " + kind_of(array) + ", not an array of rows");
  std::vector<PlotRow> rows;
  for (size_t i = 0; i < array.size(); ++i) {
    const std::string where = origin + "[" + std::to_string(i) + "]";
    if (!array[i].is_object())
      return InvalidArgument(where + " is " + kind_of(array[i]) + ", not an object");
    rows.push_back({array[i], where});
  }
  if (rows.empty()) return InvalidArgument(origin + " holds no rows");
  return rows;
}

Result<std::vector<PlotRow>> load_plot_rows(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return IoError("--in '" + path + "': is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("--in '" + path + "': cannot read: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return IoError("--in '" + path + "': cannot read: " + std::strerror(errno));
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgument("--in '" + path + "': not JSON (syntax error at byte " +
                           std::to_string(e.byte) + ")");
  }
  if (doc.is_array()) return plot_rows_of(doc, path);
  if (doc.is_object() && doc.contains("runs")) return plot_rows_of(doc["runs"], path + ": runs");
  return InvalidArgument("--in '" + path + "': " + kind_of(doc) +
                         " with no rows (expected an array of objects, or an object with a "
                         "'runs' array)");
}

Result<std::pair<std::string, std::string>> parse_plot_filter(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    return InvalidArgument("--where '" + text + "': expected KEY=VALUE");
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

Result<std::vector<PlotSeries>> plot_series_of(const std::vector<PlotRow>& rows,
                                               const PlotRowsSpec& spec) {
  std::vector<PlotSeries> out;
  for (const PlotRow& row : rows) {
    bool keep = true;
    for (const auto& [key, want] : spec.where) {
      auto it = row.value.find(key);
      keep = keep && it != row.value.end() && matches(*it, want);
    }
    if (!keep) continue;
    HEARTH_ASSIGN_OR_RETURN(double x, number_at(row, spec.x, "--x"));
    HEARTH_ASSIGN_OR_RETURN(double y, number_at(row, spec.y, "--y"));
    std::string name = spec.y;
    if (!spec.series.empty()) {
      HEARTH_ASSIGN_OR_RETURN(name, series_name(row, spec.series));
    }
    auto s =
        std::find_if(out.begin(), out.end(), [&](const PlotSeries& p) { return p.name == name; });
    if (s == out.end()) {
      out.push_back(PlotSeries{name, {}, false, ""});
      s = out.end() - 1;
    }
    s->points.emplace_back(x, y);
  }
  if (out.empty()) {
    std::string filters;
    for (const auto& [key, want] : spec.where) filters += " --where " + key + "=" + want;
    return InvalidArgument(rows.empty() ? std::string("no rows") : "no row matches" + filters);
  }
  return out;
}

}  // namespace hearth::cli
