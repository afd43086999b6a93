// The grouped (GQA) attention path gives, head for head, exactly the bits of
// attend_head: random F16 K/V over a few hundred positions, several head sizes and
// group sizes, positions before and after the 64-position blocks of attend_head.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "attention_test_util.h"
#include "engine/model/attention.h"
#include "engine/model/kv_store.h"
#include "hearth/fp16.h"

namespace hearth::engine {
namespace {

TEST(AttentionGroup, EveryHeadMatchesAttendHeadBitForBit) {
  bool ran = false;
  for (int32_t head_dim : {32, 64, 128}) {
    for (int32_t group : {1, 3, 8}) {
      const int32_t n_kv = 2, n_ctx = 300;
      KvStore kv(1, 2, n_ctx, n_kv * head_dim);
      Lcg rng{static_cast<uint32_t>(head_dim * 31 + group)};
      for (int32_t layer = 0; layer < 2; ++layer) {
        for (int32_t p = 0; p < n_ctx; ++p) {
          uint16_t* k = kv.k_row(0, layer, p);
          uint16_t* v = kv.v_row(0, layer, p);
          for (int32_t i = 0; i < n_kv * head_dim; ++i) {
            k[i] = fp32_to_fp16(rng.next() * 3.0f);
            v[i] = fp32_to_fp16(rng.next() * 2.0f);
          }
        }
      }
      kv.set_len(0, n_ctx);
      std::vector<float> q(static_cast<size_t>(group * head_dim));
      for (float& x : q) x = fp16_to_fp32(fp32_to_fp16(rng.next() * 2.0f));
      const float scale = 1.0f / 8.0f;
      for (int32_t pos : {0, 5, 63, 64, 200, n_ctx - 1}) {
        std::vector<float> scores(static_cast<size_t>(group * n_ctx));
        std::vector<float> got(q.size(), -1.0f);
        if (!attend_group(kv, 0, 1, pos, 1, group, q.data(), head_dim, scale, scores.data(),
                          got.data())) {
          continue;
        }
        ran = true;
        for (int32_t h = 0; h < group; ++h) {
          std::vector<float> want(static_cast<size_t>(head_dim));
          std::vector<float> s1(static_cast<size_t>(n_ctx));
          HeadQuery hq{0, 1, pos, 1, q.data() + static_cast<size_t>(h) * head_dim};
          attend_head(kv, hq, head_dim, scale, s1.data(), want.data());
          ASSERT_EQ(std::memcmp(want.data(), got.data() + static_cast<size_t>(h) * head_dim,
                                want.size() * sizeof(float)),
                    0)
              << "head_dim " << head_dim << " group " << group << " pos " << pos << " head " << h;
        }
      }
    }
  }
  if (!ran) GTEST_SKIP() << "SKIPPED: this build has no grouped attention path (no AVX-512)";
}

}  // namespace
}  // namespace hearth::engine
