#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>

namespace hearth::cli {
namespace {

constexpr int kWidth = 30;  // characters of the bar itself

std::string amount(uint64_t n, ProgressBar::Unit unit) {
  char buf[32];
  if (unit == ProgressBar::Unit::kCount) {
    std::snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(n));
  } else if (n >= (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", static_cast<double>(n) / (1 << 30));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(n) / (1 << 20));
  }
  return buf;
}

}  // namespace

bool ProgressBar::stderr_is_terminal() {
  return ::isatty(STDERR_FILENO) == 1;
}

ProgressBar::ProgressBar(std::string label, Unit unit, bool quiet)
    : ProgressBar(std::move(label), unit, stderr, !quiet && stderr_is_terminal()) {}

ProgressBar::ProgressBar(std::string label, Unit unit, std::FILE* out, bool enabled)
    : label_(std::move(label)),
      unit_(unit),
      out_(out),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() {
  finish();
}

ProgressFn ProgressBar::callback() {
  return [this](uint64_t done, uint64_t total) { update(done, total); };
}

void ProgressBar::update(uint64_t done, uint64_t total) {
  if (!enabled_ || finished_) return;
  done_ = std::min(done, total);
  total_ = total;
  // At most 10 draws a second, plus the first and the complete state.
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done_ < total_ && now - last_draw_ < std::chrono::milliseconds(100)) {
    dirty_ = true;
    return;
  }
  last_draw_ = now;
  draw();
}

void ProgressBar::finish() {
  if (!enabled_ || finished_.exchange(true)) return;
  if (!drawn_) return;  // nothing was ever shown: leave the terminal alone
  if (dirty_) draw();
  std::fputc('\n', out_);
  std::fflush(out_);
}

void ProgressBar::draw() {
  const double frac = total_ == 0 ? 1.0 : static_cast<double>(done_) / static_cast<double>(total_);
  const int filled = static_cast<int>(frac * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), '.');
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // \r returns to the line's start; \033[K clears what a longer previous draw left.
  std::fprintf(out_, "\r%s [%s] %3d%% %s / %s  %.1fs\033[K", label_.c_str(), bar.c_str(),
               static_cast<int>(frac * 100), amount(done_, unit_).c_str(),
               amount(total_, unit_).c_str(), secs);
  std::fflush(out_);
  drawn_ = true;
  dirty_ = false;
}

}  // namespace hearth::cli
