// The read loop is the one object of the CLI with AVX-512 code in a portable build:
// its AVX-512 and AVX2 copies are called only after a CPU check
// (scripts/check-portable-objects.sh allows this file for that reason).
#include "cli/bench_bandwidth.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "cli/bench_util.h"

namespace hearth::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The sum of n words: the read loop of the bandwidth figure. On x86-64 it is compiled
// once per vector width and the widest the CPU has is picked at run time: the baseline
// build alone would read with 16-byte loads, well below what the run-time dispatched
// AVX2 / AVX-512 kernels stream (on a 2-core Xeon: ~16 against ~22 GB/s), and so
// inflate every roofline fraction. (Picked by a call, not by an ifunc: an ifunc
// resolver runs during relocation, before a sanitizer's runtime is up, and crashed the
// ThreadSanitizer build at start.)
[[gnu::always_inline]] inline uint64_t sum_words_loop(const uint64_t* p, size_t n) {
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a0 += p[i];
    a1 += p[i + 1];
    a2 += p[i + 2];
    a3 += p[i + 3];
  }
  for (; i < n; ++i) a0 += p[i];
  return a0 + a1 + a2 + a3;
}

uint64_t sum_words_baseline(const uint64_t* p, size_t n) {
  return sum_words_loop(p, n);
}

using SumWordsFn = uint64_t (*)(const uint64_t*, size_t);

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target("avx512f"))) uint64_t sum_words_avx512(const uint64_t* p, size_t n) {
  return sum_words_loop(p, n);
}
__attribute__((target("avx2"))) uint64_t sum_words_avx2(const uint64_t* p, size_t n) {
  return sum_words_loop(p, n);
}
SumWordsFn pick_sum_words() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return sum_words_avx512;
  if (__builtin_cpu_supports("avx2")) return sum_words_avx2;
  return sum_words_baseline;
}
#else
SumWordsFn pick_sum_words() {
  return sum_words_baseline;
}
#endif

}  // namespace

Bandwidth measure_bandwidth(int threads) {
  const size_t bytes = size_t{256} << 20;
  std::vector<uint64_t> src(bytes / 8), dst(bytes / 8);
  for (size_t i = 0; i < src.size(); ++i) src[i] = i;
  std::memcpy(dst.data(), src.data(), bytes);  // fault the pages in
  auto split = [&](auto&& fn) {
    std::vector<std::thread> ts;
    const size_t n = src.size();
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] { fn(n * t / threads, n * (t + 1) / threads); });
    }
    for (auto& th : ts) th.join();
  };
  Bandwidth bw;
  std::vector<double> cp, rd;
  std::vector<uint64_t> sums(static_cast<size_t>(threads));
  const SumWordsFn sum_words = pick_sum_words();
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = Clock::now();
    split([&](size_t b, size_t e) { std::memcpy(&dst[b], &src[b], (e - b) * 8); });
    cp.push_back(2.0 * bytes / seconds_since(t0) / 1e9);  // read + write
    t0 = Clock::now();
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        const size_t n = src.size(), b = n * t / threads, e = n * (t + 1) / threads;
        sums[static_cast<size_t>(t)] = sum_words(src.data() + b, e - b);
      });
    }
    for (auto& th : ts) th.join();
    rd.push_back(static_cast<double>(bytes) / seconds_since(t0) / 1e9);
  }
  volatile uint64_t sink = 0;
  for (uint64_t s : sums) sink = sink + s;
  bw.memcpy_gbps = median(cp);
  bw.read_gbps = median(rd);
  return bw;
}

}  // namespace hearth::cli
