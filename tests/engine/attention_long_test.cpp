// Attention over long runs of positions (the long-context P.V path of the tiled
// kernels: kPvLongMin positions or more, V read in chunks, up to 8 heads a pass): every
// kernel table and tile width this CPU runs still gives attend_reference's bits, on a
// plain layer and on a sliding-window ring layer whose positions wrap.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "attention_test_util.h"
#include "engine/cpu_features.h"
#include "engine/kernels/kernel_set.h"
#include "engine/model/attention.h"
#include "engine/model/kv_store.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine {
namespace {

constexpr int32_t kKvHeads = 2;

// Positions [0, n_pos) of layer 0 written with random F16 values (a ring layer
// keeps the last ring_capacity() of them).
// The stores here have one layer.
void fill_random(KvStore& kv, int32_t n_pos, int32_t kv_dim, uint32_t seed) {
  Lcg rng{seed};
  for (int32_t layer = 0; layer < 1; ++layer) {
    for (int32_t p = 0; p < n_pos; ++p) {
      std::vector<uint16_t> k(static_cast<size_t>(kv_dim)), v(k.size());
      for (size_t i = 0; i < k.size(); ++i) {
        k[i] = fp32_to_fp16(rng.next() * 3.0f);
        v[i] = fp32_to_fp16(rng.next() * 2.0f);
      }
      kv.put_k(0, layer, p, k.data());
      kv.put_v(0, layer, p, v.data());
    }
  }
  kv.set_len(0, n_pos);
}

// attend_tokens_with on every runnable table and width against attend_reference, for
// the tokens at `positions` on KV head 1 of `layer`; the number of (table, width) pairs
// that ran.
int check_all(const KvStore& kv, int32_t layer, int32_t head_dim, int32_t group,
              const std::vector<int32_t>& positions, AttendMask mask, const std::string& what) {
  int ran = 0;
  Lcg rng{static_cast<uint32_t>(head_dim * 7 + group)};
  const size_t per_token = static_cast<size_t>(group * head_dim);
  std::vector<float> q(positions.size() * per_token);
  for (float& x : q) x = fp16_to_fp32(fp32_to_fp16(rng.next() * 2.0f));
  const float scale = 0.125f;
  std::vector<float> want(q.size());
  std::vector<float> s(static_cast<size_t>(kv.n_ctx()));
  for (size_t i = 0; i < positions.size(); ++i) {
    for (int32_t h = 0; h < group; ++h) {
      const size_t at = i * per_token + static_cast<size_t>(h * head_dim);
      attend_reference(kv, 0, layer, 1, positions[i], q.data() + at, head_dim, scale, s.data(),
                       want.data() + at, mask);
    }
  }
  std::vector<float> scratch(attend_tokens_scratch_floats(static_cast<int32_t>(positions.size()),
                                                          group, kv.n_ctx(), head_dim));
  for (const KernelSet* kernels : runnable_kernel_sets()) {
    for (int32_t lanes : {8, 16}) {
      std::vector<float> got(q.size(), -1.0f);
      std::vector<TokenQueries> tokens;
      for (size_t i = 0; i < positions.size(); ++i)
        tokens.push_back({positions[i], q.data() + i * per_token, got.data() + i * per_token});
      if (!attend_tokens_with(*kernels, lanes, kv, 0, layer, 1, group, tokens, head_dim, scale,
                              scratch.data(), mask)) {
        continue;
      }
      ++ran;
      for (size_t i = 0; i < got.size(); ++i) {
        if (std::memcmp(&want[i], &got[i], sizeof(float)) != 0) {
          ADD_FAILURE() << what << ": " << kernels->isa << " lanes " << lanes << " head_dim "
                        << head_dim << " group " << group << " output " << i << " (token "
                        << i / per_token << ") is " << got[i] << ", want " << want[i];
          return ran;
        }
      }
    }
  }
  return ran;
}

// Runs just below, at and past kPvLongMin (2048), counts that are not a whole number
// of chunks, a decode-like single token and a prefill block; head_dim 80 takes a
// partial output pass, group 12 a second pass of heads.
TEST(AttentionLong, LongRunsMatchTheReferenceBitForBit) {
  constexpr int32_t kCtx = 2200;
  int ran = 0;
  for (int32_t head_dim : {64, 80}) {
    KvStore kv =
        KvStore::create(1, 1, kCtx, kKvHeads * head_dim, KvType::kF16, {}, head_dim).value();
    fill_random(kv, kCtx, kKvHeads * head_dim, static_cast<uint32_t>(head_dim));
    for (int32_t group : {3, 8, 12}) {
      for (const std::vector<int32_t>& positions :
           std::vector<std::vector<int32_t>>{{2046},
                                             {2047},
                                             {2111},
                                             {kCtx - 1},
                                             {2040, 2041, 2042, 2043, 2044, 2045, 2046, 2047},
                                             {2100, 2101, 2102, 2103, 2104, 2105, 2106, 2107}}) {
        ran += check_all(kv, 0, head_dim, group, positions, {},
                         "plain, first pos " + std::to_string(positions[0]));
      }
    }
  }
  if (ran == 0) GTEST_SKIP() << "SKIPPED: no kernel table here has SIMD attention";
}

// A sliding window of 2100 over a ring layer that has wrapped: the long P.V runs from
// the window's start slot to the ring's end, then on from slot 0.
TEST(AttentionLong, WrappedRingMatchesTheReferenceBitForBit) {
  constexpr int32_t kWindow = 2100, kHeadDim = 64, kWritten = 3000;
  KvRing ring;
  ring.window = kWindow;
  ring.slack = 64;
  ring.layers = {true};
  KvStore kv =
      KvStore::create(1, 1, 4096, kKvHeads * kHeadDim, KvType::kF16, ring, kHeadDim).value();
  ASSERT_LT(kv.ring_capacity(), kWritten);  // the ring has wrapped
  fill_random(kv, kWritten, kKvHeads * kHeadDim, 5);
  int ran = 0;
  for (int32_t group : {1, 8}) {
    ran += check_all(kv, 0, kHeadDim, group, {kWritten - 1}, {0.0f, kWindow}, "ring decode");
    ran += check_all(kv, 0, kHeadDim, group, {kWritten - 4, kWritten - 3, kWritten - 2},
                     {0.0f, kWindow}, "ring block");
  }
  if (ran == 0) GTEST_SKIP() << "SKIPPED: no kernel table here has SIMD attention";
}

}  // namespace
}  // namespace hearth::engine
