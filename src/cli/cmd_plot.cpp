// `hearth plot --in FILE.json [--in ...] --x KEY --y KEY [--series KEY] --out FILE.svg`:
// a line chart (cli/svg_plot.h) of the rows of benchmark JSON (cli/plot_rows.h): every
// bench's --json output, and the medians files of scripts/bench-*-vs-llamacpp.sh.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/plot_rows.h"
#include "cli/registry.h"
#include "cli/svg_plot.h"

namespace hearth::cli {
namespace {

struct PlotArgs {
  std::vector<std::string> in;
  std::string out;
  std::string x, y, series;
  std::vector<std::string> where;
  bool log_x = false;
  bool log_y = false;
  std::string title, x_label, y_label;
};

// Points a log axis cannot place (<= 0): render_svg_plot leaves them out.
size_t unplaceable(const std::vector<PlotSeries>& series, const PlotOptions& o) {
  size_t n = 0;
  for (const auto& s : series)
    for (const auto& [x, y] : s.points) n += (o.log_x && x <= 0) || (o.log_y && y <= 0) ? 1 : 0;
  return n;
}

Status run_plot(const PlotArgs& a) {
  PlotRowsSpec spec{a.x, a.y, a.series, {}};
  for (const auto& w : a.where) {
    HEARTH_ASSIGN_OR_RETURN(auto filter, parse_plot_filter(w));
    spec.where.push_back(std::move(filter));
  }
  std::vector<PlotRow> rows;
  for (const auto& path : a.in) {
    HEARTH_ASSIGN_OR_RETURN(auto file_rows, load_plot_rows(path));
    rows.insert(rows.end(), file_rows.begin(), file_rows.end());
  }
  HEARTH_ASSIGN_OR_RETURN(auto series, plot_series_of(rows, spec));
  PlotOptions o;
  o.title = a.title.empty() ? a.y + " by " + a.x : a.title;
  o.x_label = a.x_label.empty() ? a.x : a.x_label;
  o.y_label = a.y_label.empty() ? a.y : a.y_label;
  o.log_x = a.log_x;
  o.log_y = a.log_y;
  if (size_t n = unplaceable(series, o); n > 0)
    std::fprintf(stderr, "hearth plot: %zu point(s) <= 0 left off the log axis\n", n);
  return write_svg_plot(a.out, o, series);
}

Registrar reg("plot", [](CLI::App& root) {
  auto a = std::make_shared<PlotArgs>();
  auto* cmd = root.add_subcommand("plot", "Draw a line chart (SVG) from benchmark JSON rows");
  cmd->add_option("--in", a->in,
                  "JSON file: an array of objects, or an object with a 'runs' array (a bench's "
                  "--json output); repeat to merge several")
      ->required();
  cmd->add_option("--x", a->x, "numeric key of the x axis")->required();
  cmd->add_option("--y", a->y, "numeric key of the y axis")->required();
  cmd->add_option("--series", a->series,
                  "one line per distinct value of this key (default: one line, named after --y)");
  cmd->add_option("--where", a->where, "KEY=VALUE: only the rows where KEY equals VALUE");
  cmd->add_flag("--log-x", a->log_x, "logarithmic x axis (points with x <= 0 are left off)");
  cmd->add_flag("--log-y", a->log_y, "logarithmic y axis (points with y <= 0 are left off)");
  cmd->add_option("--title", a->title, "chart title (default: 'Y by X')");
  cmd->add_option("--x-label", a->x_label, "x axis label (default: the --x key)");
  cmd->add_option("--y-label", a->y_label, "y axis label (default: the --y key)");
  cmd->add_option("--out", a->out, "SVG file to write")->required();
  cmd->callback([a] {
    Status s = run_plot(*a);
    if (!s.ok()) std::fprintf(stderr, "hearth plot: %s\n", s.to_string().c_str());
    exit_code() = s.ok() ? 0 : 1;
  });
});

}  // namespace
}  // namespace hearth::cli
