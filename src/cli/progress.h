// A one-line progress bar on stderr for the CLI's long steps (model load, gen-model,
// benchmarks). Libraries report progress through a hearth::ProgressFn; only the CLI
// draws. The bar is drawn only on a terminal: piped or redirected stderr, or --quiet,
// gets nothing, so logs and scripts see no carriage returns.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "hearth/progress.h"

namespace hearth::cli {

class ProgressBar {
 public:
  enum class Unit { kBytes, kCount };

  // Draws on stderr when it is a terminal and `quiet` is false.
  ProgressBar(std::string label, Unit unit, bool quiet);
  // Draws on `out` when `enabled` (tests).
  ProgressBar(std::string label, Unit unit, std::FILE* out, bool enabled);
  ~ProgressBar();  // finish()
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Draws the first update, then at most 10 times a second, and the complete state.
  void update(uint64_t done, uint64_t total);
  // Draws the last state and ends the line; later updates are ignored.
  void finish();
  // update() as a ProgressFn; the bar must outlive the calls.
  ProgressFn callback();

  bool enabled() const { return enabled_; }

  // Whether stderr is a terminal.
  static bool stderr_is_terminal();

 private:
  void draw();

  std::string label_;
  Unit unit_;
  std::FILE* out_;
  bool enabled_;
  bool drawn_ = false;
  // Atomic: a worker restart may call update() on its thread after the driver's finish().
  std::atomic<bool> finished_{false};
  bool dirty_ = false;  // an update since the last draw
  uint64_t done_ = 0, total_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace hearth::cli
