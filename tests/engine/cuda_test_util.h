// Shared by the GPU tests (tests/engine/cuda_*_test.cpp): device upload and download,
// poisoned outputs, the GPU-or-skip guard, and mismatch reports that name the first
// bad index with both values.
#pragma once

#if HEARTH_HAVE_CUDA

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/cuda/cuda_api.h"

namespace hearth::engine::cuda::testing {

// Skips the calling test when device 0 cannot be used, with the reason.
#define HEARTH_REQUIRE_GPU()                                         \
  do {                                                               \
    std::string why_not;                                             \
    if (!::hearth::engine::cuda::available(0, &why_not))             \
      GTEST_SKIP() << "no usable GPU: " << why_not;                  \
    ASSERT_EQ(::hearth::engine::cuda::set_device(0), std::string{}); \
  } while (0)

#define HEARTH_ASSERT_OK(expr)                       \
  do {                                               \
    const ::hearth::engine::cuda::Error e_ = (expr); \
    ASSERT_TRUE(e_.empty()) << #expr << ": " << e_;  \
  } while (0)

inline bool bench_enabled() {
  const char* v = std::getenv("HEARTH_GPU_BENCH");
  return v != nullptr && std::string(v) == "1";
}

// A device copy of v (bytes rounded up to 16 so that vector loads never run past it).
template <class T>
Error upload(const std::vector<T>& v, const Stream& s, DeviceBuffer* out) {
  const size_t bytes = std::max<size_t>(16, (v.size() * sizeof(T) + 15) / 16 * 16);
  if (Error e = out->allocate(bytes); !e.empty()) return e;
  if (Error e = fill_device(out->data(), 0, bytes, s); !e.empty()) return e;
  if (v.empty()) return {};
  return copy_to_device(out->data(), v.data(), v.size() * sizeof(T), s);
}

// An output buffer of n T's filled with 0xFF bytes (NaN floats and F16), so an element
// a kernel forgets to write shows.
template <class T>
Error poisoned(size_t n, const Stream& s, DeviceBuffer* out) {
  const size_t bytes = std::max<size_t>(16, n * sizeof(T));
  if (Error e = out->allocate(bytes); !e.empty()) return e;
  return fill_device(out->data(), 0xFF, bytes, s);
}

template <class T>
Error download(const DeviceBuffer& b, size_t n, const Stream& s, std::vector<T>* out) {
  out->assign(n, T{});
  if (Error e = copy_to_host(out->data(), b.data(), n * sizeof(T), s); !e.empty()) return e;
  return s.sync();
}

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Distance in units in the last place between two finite floats of the same sign
// (large when signs differ or one is NaN).
inline int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return INT64_MAX;
  const auto key = [](float f) {
    const int64_t u = bits_of(f);
    return (u & 0x80000000) ? -(u & 0x7fffffff) : u;
  };
  return std::llabs(key(a) - key(b));
}

// "" when got == want bit for bit, else the first mismatch and the count.
inline std::string bit_mismatch(const std::vector<float>& want, const std::vector<float>& got,
                                const std::string& what) {
  if (want.size() != got.size()) return what + ": sizes differ";
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (bits_of(want[i]) != bits_of(got[i]) && !(std::isnan(want[i]) && std::isnan(got[i]))) {
      if (bad++ == 0) first = i;
    }
  }
  if (bad == 0) return {};
  return what + ": " + std::to_string(bad) + " of " + std::to_string(want.size()) +
         " differ; first at index " + std::to_string(first) + ": want " +
         std::to_string(want[first]) + " got " + std::to_string(got[first]);
}

// "" when every |got - want| <= abs_tol + rel_tol * |want|, else the first failure.
inline std::string tol_mismatch(const std::vector<float>& want, const std::vector<float>& got,
                                double abs_tol, double rel_tol, const std::string& what) {
  if (want.size() != got.size()) return what + ": sizes differ";
  size_t bad = 0, first = 0;
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    worst = std::max(worst, std::isnan(d) ? INFINITY : d);
    if (!(d <= abs_tol + rel_tol * std::fabs(want[i]))) {
      if (bad++ == 0) first = i;
    }
  }
  if (bad == 0) return {};
  return what + ": " + std::to_string(bad) + " of " + std::to_string(want.size()) +
         " out of tolerance (max abs diff " + std::to_string(worst) + "); first at index " +
         std::to_string(first) + ": want " + std::to_string(want[first]) + " got " +
         std::to_string(got[first]);
}

// Median of the device times (ms) of `runs` calls of fn after one warm-up.
template <class Fn>
Error median_ms(const Stream& s, int runs, Fn fn, float* ms) {
  if (Error e = fn(); !e.empty()) return e;
  std::vector<float> t;
  for (int r = 0; r < runs; ++r) {
    Timer timer;
    if (Error e = timer.start(s); !e.empty()) return e;
    if (Error e = fn(); !e.empty()) return e;
    float one = 0.0f;
    if (Error e = timer.stop(s, &one); !e.empty()) return e;
    t.push_back(one);
  }
  std::sort(t.begin(), t.end());
  *ms = t[t.size() / 2];
  return {};
}

}  // namespace hearth::engine::cuda::testing

#endif  // HEARTH_HAVE_CUDA
