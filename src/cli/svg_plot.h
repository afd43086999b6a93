// A small, self-contained SVG line chart for the benchmarks' --plot output: axes with
// ticks (linear or log), axis labels, a title, a legend, one polyline with point
// markers per series. No dependency; the output is standalone SVG 1.1 text.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "hearth/status.h"

namespace hearth::cli {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in x order
  bool dashed = false;                            // e.g. a reference line (memcpy)
  std::string color;                              // "#rrggbb"; empty: the palette's next
};

struct PlotOptions {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;
  bool log_y = false;
  int width = 760;
  int height = 460;
};

// One axis: maps data values in [lo, hi] (log10-spaced when `log`) onto pixels
// [px_lo, px_hi] (px_hi < px_lo for a y axis, whose pixels grow downwards).
struct PlotAxis {
  double lo = 0, hi = 1;
  bool log = false;
  double px_lo = 0, px_hi = 1;
  double map(double v) const;
  // Round tick values inside [lo, hi]: 1-2-5 steps, or powers of ten (with 2 and 5
  // between them when the range is under two decades) on a log axis.
  std::vector<double> ticks() const;
};

// The data range of an axis, widened to round values; a log axis ignores values <= 0.
PlotAxis fit_axis(const std::vector<double>& values, bool log, double px_lo, double px_hi);

// The SVG text of the chart. A log axis drops the points it cannot place (<= 0).
std::string render_svg_plot(const PlotOptions& options, const std::vector<PlotSeries>& series);

// render_svg_plot, written to `path` (the error names the path).
Status write_svg_plot(const std::string& path, const PlotOptions& options,
                      const std::vector<PlotSeries>& series);

}  // namespace hearth::cli
