// Every table's vectorized Q8_0 / Q8_K / F16 activation quantizer writes exactly the
// bytes of the reference (quantize_activation_row): random rows at several scales, exact ties
// (x * id landing on k + 0.5), zero rows, tiny and huge magnitudes.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "engine/cpu_features.h"
#include "engine/kernels/kernel_set.h"
#include "engine/matmul.h"
#include "quant_test_util.h"

namespace hearth::engine {
namespace {

using gguf::TensorType;

using QuantizeFn = void (*)(const float* x, int64_t n, uint8_t* out);

// `quantize` writes exactly the bytes of the reference for the partner of `weight`.
void expect_same_bytes(const KernelSet& k, TensorType weight, QuantizeFn quantize,
                       const std::vector<float>& x, const char* what) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> want(activation_row_bytes(weight, n), 0xAB);
  std::vector<uint8_t> got(want.size(), 0xCD);
  quantize_activation_row(weight, x.data(), n, want.data());
  quantize(x.data(), n, got.data());
  size_t at = 0;
  while (at < want.size() && want[at] == got[at]) ++at;
  ASSERT_EQ(at, want.size()) << k.isa << " " << what << ": n=" << n << ", byte " << at << " of "
                             << want.size() << " is " << int{got[at]} << ", not " << int{want[at]};
}

// Random rows at several scales: tiny, unit, large, near the F16 range's end.
std::vector<std::vector<float>> gaussian_rows(int64_t n) {
  std::vector<std::vector<float>> rows;
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    const float scale = seed % 4 == 0 ? 1e-6f : seed % 4 == 1 ? 1.0f : seed % 4 == 2 ? 40.0f : 3e4f;
    rows.push_back(testing::gaussian(n, seed, scale));
  }
  return rows;
}

// A random row with every other block of `block` elements zero (one of them -0).
std::vector<float> zero_blocks_among_random(int64_t n, int64_t block) {
  std::vector<float> x = testing::gaussian(n, 99, 1.0f);
  for (int64_t i = 0; i < n; i += 2 * block) {
    for (int64_t j = 0; j < block && i + j < n; ++j)
      x[static_cast<size_t>(i + j)] = j == 5 ? -0.0f : 0.0f;
  }
  return x;
}

TEST(QuantizeQ8_0Kernels, MatchTheReferenceByteForByte) {
  int tested = 0;
  for (const KernelSet* k : runnable_kernel_sets()) {
    if (k->quantize_q8_0 == nullptr) continue;
    ++tested;
    auto expect_same = [&](const std::vector<float>& x, const char* what) {
      expect_same_bytes(*k, TensorType::kQ4_0, k->quantize_q8_0, x, what);  // Q4_0's is Q8_0
    };
    for (int64_t n : {32, 64, 608, 2048, 5632}) {
      for (const std::vector<float>& x : gaussian_rows(n)) expect_same(x, "gaussian");
      // amax 127 gives id == 1: every other element is an exact tie k + 0.5.
      std::vector<float> ties(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        ties[static_cast<size_t>(i)] =
            i % 32 == 0 ? 127.0f : static_cast<float>((i % 60) - 30) + 0.5f;
        if (i % 3 == 0 && i % 32 != 0) ties[static_cast<size_t>(i)] = -ties[static_cast<size_t>(i)];
      }
      expect_same(ties, "ties");
      expect_same(std::vector<float>(static_cast<size_t>(n), 0.0f), "zeros");
      expect_same(zero_blocks_among_random(n, 32), "zero blocks among random ones");
    }
  }
  if (tested == 0) GTEST_SKIP() << "SKIPPED: no table on this CPU has a vectorized Q8_0 quantizer";
}

TEST(QuantizeQ8_KKernels, MatchTheReferenceByteForByte) {
  int tested = 0;
  for (const KernelSet* k : runnable_kernel_sets()) {
    if (k->quantize_q8_k == nullptr) continue;
    ++tested;
    auto expect_same = [&](const std::vector<float>& x, const char* what) {
      expect_same_bytes(*k, TensorType::kQ4_K, k->quantize_q8_k, x, what);  // Q4_K's is Q8_K
    };
    for (int64_t n : {256, 2048, 5632}) {
      for (const std::vector<float>& x : gaussian_rows(n)) expect_same(x, "gaussian");
      // max = +-127 gives iscale = -+1: halves are exact ties (rounded to even), and the
      // largest magnitude appears twice with both signs (the first one sets the sign).
      for (float first : {127.0f, -127.0f}) {
        std::vector<float> ties(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          float v = static_cast<float>((i % 60) - 30) + 0.5f;
          if (i % 3 == 0) v = -v;
          if (i % 256 == 7) v = first;
          if (i % 256 == 200) v = -first;
          ties[static_cast<size_t>(i)] = v;
        }
        expect_same(ties, first > 0 ? "ties, +127 first" : "ties, -127 first");
      }
      expect_same(std::vector<float>(static_cast<size_t>(n), 0.0f), "zeros");
      expect_same(zero_blocks_among_random(n, 256), "zero blocks among random ones");
    }
  }
  if (tested == 0) GTEST_SKIP() << "SKIPPED: no table on this CPU has a vectorized Q8_K quantizer";
}

TEST(QuantizeF16Kernels, MatchTheReferenceByteForByte) {
  int tested = 0;
  for (const KernelSet* k : runnable_kernel_sets()) {
    if (k->quantize_f16 == nullptr) continue;
    ++tested;
    for (int64_t n : {16, 40, 2048, 5632}) {
      for (float scale : {1e-7f, 1.0f, 3e4f, 1e5f}) {  // subnormal halves .. overflow to inf
        const std::vector<float> x = testing::gaussian(static_cast<size_t>(n), 7, scale);
        std::vector<uint8_t> want(activation_row_bytes(TensorType::kF16, n), 0xAB);
        std::vector<uint8_t> got(want.size(), 0xCD);
        quantize_activation_row(TensorType::kF16, x.data(), n, want.data());
        k->quantize_f16(x.data(), n, got.data());
        ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size()), 0)
            << k->isa << " n=" << n << " scale=" << scale;
      }
    }
  }
  if (tested == 0) GTEST_SKIP() << "SKIPPED: no table on this CPU has a vectorized F16 conversion";
}

}  // namespace
}  // namespace hearth::engine
