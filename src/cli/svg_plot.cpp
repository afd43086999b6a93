#include "cli/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

namespace hearth::cli {
namespace {

constexpr const char* kColors[] = {"#c2410c", "#1d4ed8", "#15803d", "#7c3aed",
                                   "#b45309", "#0e7490", "#be123c", "#4d7c0f"};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

// A tick label: integers plainly, others with the fewest digits that show them.
std::string tick_label(double v) {
  char buf[32];
  if (std::fabs(v) >= 1e6 || (std::fabs(v) < 1e-3 && v != 0)) {
    std::snprintf(buf, sizeof(buf), "%.0e", v);
  } else if (v == std::floor(v)) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3g", v);
  }
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

double nice_step(double range, int target_ticks) {
  const double raw = range / std::max(1, target_ticks);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

bool placeable(double v, bool log) {
  return std::isfinite(v) && (!log || v > 0);
}

}  // namespace

double PlotAxis::map(double v) const {
  const double a = log ? std::log10(lo) : lo;
  const double b = log ? std::log10(hi) : hi;
  const double x = log ? std::log10(v) : v;
  const double t = b > a ? (x - a) / (b - a) : 0.5;
  return px_lo + t * (px_hi - px_lo);
}

std::vector<double> PlotAxis::ticks() const {
  std::vector<double> out;
  const double eps = 1e-9 * std::max(std::fabs(lo), std::fabs(hi));
  if (log) {
    const bool fine = hi / lo < 100;
    for (int e = static_cast<int>(std::floor(std::log10(lo)));
         e <= static_cast<int>(std::ceil(std::log10(hi))); ++e) {
      for (double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
        const double v = m * std::pow(10.0, e);
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
      }
    }
    return out;
  }
  const double step = nice_step(hi - lo, 5);
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + eps; v += step)
    out.push_back(std::fabs(v) < eps ? 0 : v);
  return out;
}

PlotAxis fit_axis(const std::vector<double>& values, bool log, double px_lo, double px_hi) {
  PlotAxis axis;
  axis.log = log;
  axis.px_lo = px_lo;
  axis.px_hi = px_hi;
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values) {
    if (!placeable(v, log)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (!std::isfinite(lo)) {
    lo = log ? 1 : 0;
    hi = log ? 10 : 1;
  }
  if (log) {
    axis.lo = std::pow(10.0, std::floor(std::log10(lo)));
    axis.hi = std::pow(10.0, std::ceil(std::log10(hi)));
    if (axis.hi <= axis.lo) axis.hi = axis.lo * 10;
    return axis;
  }
  if (lo > 0 && lo < hi * 0.5) lo = 0;  // start at zero unless the data sits far from it
  if (hi == lo) {
    hi = lo + (lo == 0 ? 1 : std::fabs(lo) * 0.1);
  }
  const double step = nice_step(hi - lo, 5);
  axis.lo = std::floor(lo / step) * step;
  axis.hi = std::ceil(hi / step) * step;
  return axis;
}

std::string render_svg_plot(const PlotOptions& o, const std::vector<PlotSeries>& series) {
  // Plot area: room for the title above, tick labels and axis labels left and below,
  // the legend on the right.
  const double left = 72, top = 44, right = o.width - 190.0, bottom = o.height - 56.0;
  std::vector<double> xs, ys;
  for (const auto& s : series) {
    for (const auto& [x, y] : s.points) {
      if (placeable(x, o.log_x) && placeable(y, o.log_y)) {
        xs.push_back(x);
        ys.push_back(y);
      }
    }
  }
  const PlotAxis ax = fit_axis(xs, o.log_x, left, right);
  const PlotAxis ay = fit_axis(ys, o.log_y, bottom, top);

  std::string svg;
  svg += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(o.width) +
         "\" height=\"" + std::to_string(o.height) + "\" viewBox=\"0 0 " + std::to_string(o.width) +
         " " + std::to_string(o.height) +
         "\" font-family=\"system-ui, sans-serif\" font-size=\"12\">\n";
  svg += "<title>" + escape(o.title) + "</title>\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  svg += "<text x=\"" + num(left) + "\" y=\"26\" font-size=\"15\" font-weight=\"600\">" +
         escape(o.title) + "</text>\n";

  // Grid, ticks and tick labels.
  svg += "<g stroke=\"#e5e7eb\" stroke-width=\"1\">\n";
  for (double t : ax.ticks())
    svg += "<line x1=\"" + num(ax.map(t)) + "\" y1=\"" + num(top) + "\" x2=\"" + num(ax.map(t)) +
           "\" y2=\"" + num(bottom) + "\"/>\n";
  for (double t : ay.ticks())
    svg += "<line x1=\"" + num(left) + "\" y1=\"" + num(ay.map(t)) + "\" x2=\"" + num(right) +
           "\" y2=\"" + num(ay.map(t)) + "\"/>\n";
  svg += "</g>\n<g fill=\"#374151\">\n";
  for (double t : ax.ticks())
    svg += "<text x=\"" + num(ax.map(t)) + "\" y=\"" + num(bottom + 18) +
           "\" text-anchor=\"middle\">" + escape(tick_label(t)) + "</text>\n";
  for (double t : ay.ticks())
    svg += "<text x=\"" + num(left - 8) + "\" y=\"" + num(ay.map(t) + 4) +
           "\" text-anchor=\"end\">" + escape(tick_label(t)) + "</text>\n";
  svg += "</g>\n";
  svg += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(right - left) +
         "\" height=\"" + num(bottom - top) + "\" fill=\"none\" stroke=\"#6b7280\"/>\n";
  svg += "<text x=\"" + num((left + right) / 2) + "\" y=\"" + num(o.height - 14.0) +
         "\" text-anchor=\"middle\" fill=\"#111827\">" + escape(o.x_label) +
         (o.log_x ? " (log)" : "") + "</text>\n";
  svg += "<text transform=\"translate(18 " + num((top + bottom) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\" fill=\"#111827\">" + escape(o.y_label) +
         (o.log_y ? " (log)" : "") + "</text>\n";

  // Series: a polyline through the placeable points in x order, a marker on each.
  for (size_t i = 0; i < series.size(); ++i) {
    const std::string color =
        series[i].color.empty() ? kColors[i % std::size(kColors)] : escape(series[i].color);
    std::vector<std::pair<double, double>> pts;
    for (const auto& p : series[i].points) {
      if (placeable(p.first, o.log_x) && placeable(p.second, o.log_y)) pts.push_back(p);
    }
    std::stable_sort(pts.begin(), pts.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    svg += "<g class=\"series\" data-name=\"" + escape(series[i].name) + "\">\n";
    if (pts.size() > 1) {
      svg += "<polyline fill=\"none\" stroke=\"" + color + "\" stroke-width=\"2\"" +
             (series[i].dashed ? " stroke-dasharray=\"6 4\"" : "") + " points=\"";
      for (const auto& [x, y] : pts) svg += num(ax.map(x)) + "," + num(ay.map(y)) + " ";
      svg += "\"/>\n";
    }
    for (const auto& [x, y] : pts)
      svg += "<circle cx=\"" + num(ax.map(x)) + "\" cy=\"" + num(ay.map(y)) +
             "\" r=\"3.5\" fill=\"" + color + "\"/>\n";
    svg += "</g>\n";
    // Legend entry.
    const double ly = top + 8 + 20.0 * static_cast<double>(i);
    svg += "<line x1=\"" + num(right + 16) + "\" y1=\"" + num(ly) + "\" x2=\"" + num(right + 40) +
           "\" y2=\"" + num(ly) + "\" stroke=\"" + color + "\" stroke-width=\"2\"" +
           (series[i].dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
    svg += "<text x=\"" + num(right + 46) + "\" y=\"" + num(ly + 4) + "\" fill=\"#111827\">" +
           escape(series[i].name) + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

Status write_svg_plot(const std::string& path, const PlotOptions& options,
                      const std::vector<PlotSeries>& series) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError("cannot create SVG file '" + path + "'");
  out << render_svg_plot(options, series);
  out.close();
  if (!out) return IoError("cannot write SVG file '" + path + "'");
  return OkStatus();
}

}  // namespace hearth::cli
