#include "cli/bench_util.h"

#include <time.h>

#include <algorithm>

namespace hearth::cli {

std::vector<int32_t> bench_tokens(int32_t n, int32_t n_vocab, uint32_t seed) {
  std::vector<int32_t> out(static_cast<size_t>(std::max(n, 0)));
  uint32_t x = seed;
  for (auto& t : out) {
    x = x * 1664525u + 1013904223u;
    t = static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(n_vocab));
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

}  // namespace hearth::cli
