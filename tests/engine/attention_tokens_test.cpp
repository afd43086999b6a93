// The position-tiled attention (attend_tokens, on every kernel table and tile width
// this CPU runs)
// gives, head for head, exactly the bits of attend_reference, the definition; and
// the definition's sums are the same with an FMA per step or a multiply and an add
// (every product of two F16 values is exact in f32).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "attention_test_util.h"
#include "engine/cpu_features.h"
#include "engine/kernels/kernel_set.h"
#include "engine/model/attention.h"
#include "engine/model/kv_store.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine {
namespace {

constexpr int32_t kCtx = 300;
constexpr int32_t kKvHeads = 2;

KvStore random_kv(int32_t head_dim, uint32_t seed) {
  // V in head runs, as the engine keeps it.
  KvStore kv = KvStore::create(1, 2, kCtx, kKvHeads * head_dim, KvType::kF16, {}, head_dim).value();
  Lcg rng{seed};
  for (int32_t layer = 0; layer < 2; ++layer) {
    for (int32_t p = 0; p < kCtx; ++p) {
      std::vector<uint16_t> k(static_cast<size_t>(kKvHeads * head_dim)), v(k.size());
      for (size_t i = 0; i < k.size(); ++i) {
        k[i] = fp32_to_fp16(rng.next() * 3.0f);
        v[i] = fp32_to_fp16(rng.next() * 2.0f);
      }
      kv.put_k(0, layer, p, k.data());
      kv.put_v(0, layer, p, v.data());
    }
  }
  kv.set_len(0, kCtx);
  return kv;
}

// Token position sets: single tokens around the 8- and 16-position tiles, a block of
// consecutive positions (a prefill slice), and scattered ones.
const std::vector<std::vector<int32_t>>& position_sets() {
  static const std::vector<std::vector<int32_t>> sets = {{0},
                                                         {5},
                                                         {7},
                                                         {8},
                                                         {15},
                                                         {16},
                                                         {17},
                                                         {63},
                                                         {64},
                                                         {kCtx - 1},
                                                         {0, 1, 2, 3, 4, 5, 6, 7},
                                                         {292, 293, 294, 295, 296, 297, 298, 299},
                                                         {3, 40, 41, 200},
                                                         {16, 31, 32}};
  return sets;
}

TEST(AttentionTokens, EveryWidthMatchesTheReferenceBitForBit) {
  int widths_run = 0;
  for (const KernelSet* kernels : runnable_kernel_sets()) {
    for (int32_t lanes : {8, 16}) {
      bool ran = false;
      for (int32_t head_dim : {32, 64, 80, 128}) {
        for (int32_t group : {1, 3, 8, 12}) {
          const KvStore kv = random_kv(head_dim, static_cast<uint32_t>(head_dim * 31 + group));
          Lcg rng{static_cast<uint32_t>(lanes + head_dim + group)};
          std::vector<float> scratch(attend_tokens_scratch_floats(8, group, kCtx, head_dim));
          for (const auto& positions : position_sets()) {
            const size_t per_token = static_cast<size_t>(group * head_dim);
            std::vector<float> q(positions.size() * per_token);
            for (float& x : q) x = fp16_to_fp32(fp32_to_fp16(rng.next() * 2.0f));
            std::vector<float> got(q.size(), -1.0f);
            std::vector<TokenQueries> tokens;
            for (size_t i = 0; i < positions.size(); ++i)
              tokens.push_back(
                  {positions[i], q.data() + i * per_token, got.data() + i * per_token});
            const float scale = 1.0f / 8.0f;
            if (!attend_tokens_with(*kernels, lanes, kv, 0, 1, 1, group, tokens, head_dim, scale,
                                    scratch.data())) {
              continue;
            }
            ran = true;
            for (size_t i = 0; i < positions.size(); ++i) {
              for (int32_t h = 0; h < group; ++h) {
                const size_t at = i * per_token + static_cast<size_t>(h * head_dim);
                std::vector<float> want(static_cast<size_t>(head_dim));
                std::vector<float> s1(kCtx);
                attend_reference(kv, 0, 1, 1, positions[i], q.data() + at, head_dim, scale,
                                 s1.data(), want.data());
                ASSERT_EQ(std::memcmp(want.data(), got.data() + at, want.size() * sizeof(float)), 0)
                    << kernels->isa << " lanes " << lanes << " head_dim " << head_dim << " group "
                    << group << " token " << i << " at pos " << positions[i] << " head " << h;
              }
            }
          }
        }
      }
      widths_run += ran ? 1 : 0;
      if (!ran) std::printf("SKIPPED: table %s has no %d-lane attention\n", kernels->isa, lanes);
    }
  }
  if (widths_run == 0) GTEST_SKIP() << "SKIPPED: no kernel table here has SIMD attention";
}

// Gemma's sliding window and soft-cap: every table and width still gives the
// definition's bits, with windows shorter than, across and longer than a tile, and
// head sizes of the architecture set (16, 48, 64).
TEST(AttentionTokens, WindowAndSoftcapMatchTheReferenceBitForBit) {
  const AttendMask masks[] = {{0.0f, 64}, {4.0f, 0}, {50.0f, 17}, {4.0f, 5}, {0.0f, 1}};
  int runs = 0;
  for (const KernelSet* kernels : runnable_kernel_sets()) {
    for (int32_t lanes : {8, 16}) {
      for (int32_t head_dim : {16, 48, 64}) {
        for (int32_t group : {1, 4}) {
          const KvStore kv = random_kv(head_dim, static_cast<uint32_t>(head_dim * 7 + group));
          Lcg rng{static_cast<uint32_t>(lanes * 3 + head_dim + group)};
          std::vector<float> scratch(attend_tokens_scratch_floats(8, group, kCtx, head_dim));
          for (const AttendMask& mask : masks) {
            for (const auto& positions : position_sets()) {
              const size_t per_token = static_cast<size_t>(group * head_dim);
              std::vector<float> q(positions.size() * per_token);
              for (float& x : q) x = fp16_to_fp32(fp32_to_fp16(rng.next() * 2.0f));
              std::vector<float> got(q.size(), -1.0f);
              std::vector<TokenQueries> tokens;
              for (size_t i = 0; i < positions.size(); ++i)
                tokens.push_back(
                    {positions[i], q.data() + i * per_token, got.data() + i * per_token});
              if (!attend_tokens_with(*kernels, lanes, kv, 0, 1, 1, group, tokens, head_dim, 0.25f,
                                      scratch.data(), mask)) {
                continue;
              }
              ++runs;
              for (size_t i = 0; i < positions.size(); ++i) {
                for (int32_t h = 0; h < group; ++h) {
                  const size_t at = i * per_token + static_cast<size_t>(h * head_dim);
                  std::vector<float> want(static_cast<size_t>(head_dim)), s1(kCtx);
                  attend_reference(kv, 0, 1, 1, positions[i], q.data() + at, head_dim, 0.25f,
                                   s1.data(), want.data(), mask);
                  ASSERT_EQ(std::memcmp(want.data(), got.data() + at, want.size() * sizeof(float)),
                            0)
                      << kernels->isa << " lanes " << lanes << " head_dim " << head_dim << " group "
                      << group << " window " << mask.window << " softcap " << mask.softcap
                      << " pos " << positions[i] << " head " << h;
                }
              }
            }
          }
        }
      }
    }
  }
  if (runs == 0) GTEST_SKIP() << "SKIPPED: no kernel table here has SIMD attention";
}

// The window's meaning: a window at least pos + 1 long changes nothing, and a window of
// one position returns that position's V exactly (its probability is 1).
TEST(AttentionTokens, WindowSemantics) {
  const int32_t head_dim = 32;
  const KvStore kv = random_kv(head_dim, 5);
  Lcg rng{3};
  std::vector<float> q(head_dim);
  for (float& x : q) x = fp16_to_fp32(fp32_to_fp16(rng.next()));
  std::vector<float> plain(head_dim), wide(head_dim), one(head_dim), s(kCtx);
  for (int32_t pos : {0, 9, 100, kCtx - 1}) {
    attend_reference(kv, 0, 0, 1, pos, q.data(), head_dim, 0.2f, s.data(), plain.data());
    attend_reference(kv, 0, 0, 1, pos, q.data(), head_dim, 0.2f, s.data(), wide.data(),
                     {0.0f, pos + 1});
    EXPECT_EQ(plain, wide) << "pos " << pos;
    attend_reference(kv, 0, 0, 1, pos, q.data(), head_dim, 0.2f, s.data(), one.data(), {0.0f, 1});
    for (int32_t d = 0; d < head_dim; ++d)  // KV head 1
      EXPECT_EQ(one[d], fp16_to_fp32(kv.v_at(0, 0, pos, head_dim + d))) << "pos " << pos;
  }
}

// attend_tokens itself (whatever width it picks, or the reference loop) agrees too,
// including head sizes no tile width divides.
TEST(AttentionTokens, DispatchMatchesTheReference) {
  for (int32_t head_dim : {24, 64}) {
    const int32_t group = 4;
    const KvStore kv = random_kv(head_dim, 99);
    Lcg rng{7};
    const std::vector<int32_t> positions = {100, 101, 102};
    const size_t per_token = static_cast<size_t>(group * head_dim);
    std::vector<float> q(positions.size() * per_token);
    for (float& x : q) x = fp16_to_fp32(fp32_to_fp16(rng.next()));
    std::vector<float> got(q.size());
    std::vector<TokenQueries> tokens;
    for (size_t i = 0; i < positions.size(); ++i)
      tokens.push_back({positions[i], q.data() + i * per_token, got.data() + i * per_token});
    std::vector<float> scratch(attend_tokens_scratch_floats(8, group, kCtx, head_dim));
    attend_tokens(kv, 0, 0, 0, group, tokens, head_dim, 0.125f, scratch.data());
    for (size_t i = 0; i < positions.size(); ++i) {
      for (int32_t h = 0; h < group; ++h) {
        const size_t at = i * per_token + static_cast<size_t>(h * head_dim);
        std::vector<float> want(static_cast<size_t>(head_dim)), s1(kCtx);
        attend_reference(kv, 0, 0, 0, positions[i], q.data() + at, head_dim, 0.125f, s1.data(),
                         want.data());
        ASSERT_EQ(std::memcmp(want.data(), got.data() + at, want.size() * sizeof(float)), 0)
            << "head_dim " << head_dim << " token " << i << " head " << h;
      }
    }
  }
}

// The exactness the definition relies on: with F16 operands, fma(a, b, s) == s + a * b
// for every step of a score and of an output, so scalar code with or without FMA
// contraction gives the SIMD kernels' bits.
TEST(AttentionTokens, F16ProductsAreExactSoFmaAndMulAddAgree) {
  Lcg rng{11};
  int mismatches = 0;
  for (int i = 0; i < 200000; ++i) {
    const float a = fp16_to_fp32(fp32_to_fp16(rng.next() * 60000.0f));
    const float b = fp16_to_fp32(fp32_to_fp16(rng.next() * 1e-3f));
    const float s = rng.next() * 1e3f;
    volatile float prod = a * b;  // volatile: no contraction into an FMA here
    const float sum = s + prod;
    mismatches += std::fma(a, b, s) != sum ? 1 : 0;
    ASSERT_EQ(static_cast<double>(prod), static_cast<double>(a) * static_cast<double>(b));
  }
  EXPECT_EQ(mismatches, 0);
}

// A decode token split by positions (attend_split_*): every KV head's outputs are
// attend_reference's bits, whatever the position ranges and their order, with and
// without a soft-cap; a ring or a window is not split (the tasks say so).
TEST(AttentionTokens, SplitDecodeMatchesTheReferenceBitForBit) {
  if (active_kernels().attend_scores == nullptr) GTEST_SKIP() << "SKIPPED: no split decode here";
  for (int32_t head_dim : {32, 64, 80, 128}) {
    for (int32_t group : {1, 3, 8, 12}) {
      const KvStore kv = random_kv(head_dim, static_cast<uint32_t>(head_dim * 13 + group));
      Lcg rng{static_cast<uint32_t>(head_dim + group * 7)};
      const size_t per_head = static_cast<size_t>(group * head_dim);
      std::vector<float> shared(kKvHeads * attend_tokens_scratch_floats(1, group, kCtx, head_dim));
      std::vector<float> slot(attend_split_scratch_floats(kKvHeads, group, head_dim));
      for (int32_t pos : {0, 15, 16, 40, 200, kCtx - 2, kCtx - 1}) {
        // Queries of +-40 make peaked softmaxes, most probabilities far below the max
        // or underflowing to 0.
        for (const auto& [softcap, amplitude] :
             {std::pair{0.0f, 2.0f}, std::pair{0.0f, 40.0f}, std::pair{4.0f, 2.0f}}) {
          std::vector<float> q(kKvHeads * per_head), got(q.size(), -1.0f);
          for (float& x : q) x = fp16_to_fp32(fp32_to_fp16(rng.next() * amplitude));
          TokenQueries per[kKvHeads];
          for (int32_t h = 0; h < kKvHeads; ++h)
            per[h] = {pos, q.data() + h * per_head, got.data() + h * per_head};
          AttendTask tasks[kKvHeads];
          ASSERT_TRUE(attend_split_tasks(kv, 0, 1, kKvHeads, group, per, head_dim, 0.125f,
                                         shared.data(), tasks, {softcap, 0}))
              << "head_dim " << head_dim;
          // Three ranges, the last first: [32, end), [0, 16), [16, 32).
          attend_split_scores(tasks, kKvHeads, 32, kCtx + 16, slot.data());
          attend_split_scores(tasks, kKvHeads, 0, 16, slot.data());
          attend_split_scores(tasks, kKvHeads, 16, 32, slot.data());
          for (int32_t h = 0; h < kKvHeads; ++h) attend_split_finish(tasks[h]);
          for (int32_t h = 0; h < kKvHeads; ++h) {
            for (int32_t j = 0; j < group; ++j) {
              const size_t at = h * per_head + static_cast<size_t>(j * head_dim);
              std::vector<float> want(static_cast<size_t>(head_dim)), s1(kCtx);
              attend_reference(kv, 0, 1, h, pos, q.data() + at, head_dim, 0.125f, s1.data(),
                               want.data(), {softcap, 0});
              ASSERT_EQ(std::memcmp(want.data(), got.data() + at, want.size() * sizeof(float)), 0)
                  << "head_dim " << head_dim << " group " << group << " pos " << pos << " kv head "
                  << h << " query " << j << " softcap " << softcap << " amplitude " << amplitude;
            }
          }
        }
      }
      TokenQueries per[kKvHeads];
      std::vector<float> q(kKvHeads * per_head, 0.5f), out(q.size());
      for (int32_t h = 0; h < kKvHeads; ++h)
        per[h] = {10, q.data() + h * per_head, out.data() + h * per_head};
      AttendTask tasks[kKvHeads];
      EXPECT_FALSE(attend_split_tasks(kv, 0, 1, kKvHeads, group, per, head_dim, 0.125f,
                                      shared.data(), tasks, {0.0f, 8}))
          << "a window is not split";
    }
  }
}

}  // namespace
}  // namespace hearth::engine
