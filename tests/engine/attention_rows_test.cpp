// The blocked attention loops give exactly the bits of one kernel call per position.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "attention_test_util.h"
#include "engine/matmul.h"
#include "engine/model/attention.h"
#include "hearth/fp16.h"

namespace hearth::engine {
namespace {

TEST(AttentionRows, DotRowsMatchesOneCallPerRow) {
  Lcg rng{5};
  for (int32_t n : {32, 64, 80, 128}) {
    for (int32_t n_rows : {1, 3, 4, 7, 64}) {
      std::vector<std::vector<uint16_t>> k(static_cast<size_t>(n_rows));
      std::vector<const uint16_t*> rows;
      for (auto& r : k) {
        for (int32_t i = 0; i < n; ++i) r.push_back(fp32_to_fp16(rng.next() * 4.0f));
        rows.push_back(r.data());
      }
      std::vector<float> q(static_cast<size_t>(n));
      for (float& v : q) v = fp16_to_fp32(fp32_to_fp16(rng.next()));
      std::vector<float> got(static_cast<size_t>(n_rows));
      dot_f16_rows(rows.data(), n_rows, q.data(), n, got.data());
      for (int32_t r = 0; r < n_rows; ++r) {
        const float want = dot_f16_f32(rows[static_cast<size_t>(r)], q.data(), n);
        EXPECT_EQ(std::memcmp(&want, &got[static_cast<size_t>(r)], 4), 0)
            << "n " << n << " row " << r << ": " << want << " vs " << got[static_cast<size_t>(r)];
      }
    }
  }
}

TEST(AttentionRows, WeightedSumMatchesAxpyPerRow) {
  Lcg rng{9};
  for (int32_t n : {8, 64, 72, 128, 20}) {
    const int32_t n_rows = 37;
    std::vector<std::vector<uint16_t>> v(static_cast<size_t>(n_rows));
    std::vector<const uint16_t*> rows;
    std::vector<float> probs;
    for (auto& r : v) {
      for (int32_t i = 0; i < n; ++i) r.push_back(fp32_to_fp16(rng.next() * 3.0f));
      rows.push_back(r.data());
      probs.push_back(probs.size() % 5 == 2 ? 0.0f : fp16_to_fp32(fp32_to_fp16(rng.next())));
    }
    std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    for (int32_t d = 0; d < n; ++d) want[d] = got[d] = rng.next();
    for (int32_t r = 0; r < n_rows; ++r) {
      if (probs[r] != 0.0f) axpy_f16(probs[r], rows[r], want.data(), n);
    }
    weighted_sum_f16_rows(rows.data(), probs.data(), n_rows, n, got.data());
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0) << "n " << n;
  }
}

}  // namespace
}  // namespace hearth::engine
