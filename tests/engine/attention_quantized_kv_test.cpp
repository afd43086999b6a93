// Attention over quantized KV rows (Q8_0 / Q4_0): every kernel table and tile width
// gives attend_reference's bits (attention.h's quantized order), with and without
// Gemma's window and soft-cap; the dispatcher agrees too; and the definition reads the
// blocks as llama.cpp lays them out (its result is attention over the dequantized
// values, to float precision).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "attention_test_util.h"
#include "engine/cpu_features.h"
#include "engine/kernels/kernel_set.h"
#include "engine/model/attention.h"
#include "engine/model/kv_store.h"
#include "engine/quant/quant.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine {
namespace {

constexpr int32_t kCtx = 200;
constexpr int32_t kKvHeads = 2;

gguf::TensorType tensor_type(KvType t) {
  return t == KvType::kQ8_0 ? gguf::TensorType::kQ8_0 : gguf::TensorType::kQ4_0;
}

KvStore random_kv(KvType type, int32_t head_dim, uint32_t seed) {
  const int32_t kvd = kKvHeads * head_dim;
  KvStore kv = KvStore::create(1, 2, kCtx, kvd, type).value();
  Lcg rng{seed};
  std::vector<float> k(static_cast<size_t>(kvd)), v(static_cast<size_t>(kvd));
  for (int32_t layer = 0; layer < 2; ++layer) {
    for (int32_t p = 0; p < kCtx; ++p) {
      for (int32_t i = 0; i < kvd; ++i) {
        k[static_cast<size_t>(i)] = rng.next() * 3.0f;
        v[static_cast<size_t>(i)] = rng.next() * 2.0f;
      }
      EXPECT_TRUE(quantize_row(tensor_type(type), k.data(), kv.k_bytes(0, layer, p), kvd).ok());
      EXPECT_TRUE(quantize_row(tensor_type(type), v.data(), kv.v_bytes(0, layer, p), kvd).ok());
    }
  }
  kv.set_len(0, kCtx);
  return kv;
}

const std::vector<std::vector<int32_t>>& position_sets() {
  static const std::vector<std::vector<int32_t>> sets = {{0},
                                                         {7},
                                                         {8},
                                                         {15},
                                                         {16},
                                                         {17},
                                                         {63},
                                                         {kCtx - 1},
                                                         {0, 1, 2, 3, 4, 5, 6, 7},
                                                         {192, 193, 194, 195, 196, 197, 198, 199},
                                                         {3, 40, 41, 150}};
  return sets;
}

struct Queries {
  std::vector<float> q, got;
  std::vector<TokenQueries> tokens;
};

Queries make_queries(const std::vector<int32_t>& positions, int32_t group, int32_t head_dim,
                     Lcg& rng) {
  Queries r;
  const size_t per_token = static_cast<size_t>(group * head_dim);
  r.q.resize(positions.size() * per_token);
  for (float& x : r.q) x = fp16_to_fp32(fp32_to_fp16(rng.next() * 2.0f));
  r.got.assign(r.q.size(), -1.0f);
  for (size_t i = 0; i < positions.size(); ++i)
    r.tokens.push_back({positions[i], r.q.data() + i * per_token, r.got.data() + i * per_token});
  return r;
}

// Each output of `r` equals attend_reference's, bit for bit.
void expect_reference_bits(const KvStore& kv, const Queries& r, int32_t group, int32_t head_dim,
                           float scale, AttendMask mask, const std::string& what) {
  const size_t per_token = static_cast<size_t>(group * head_dim);
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    for (int32_t h = 0; h < group; ++h) {
      const size_t at = i * per_token + static_cast<size_t>(h * head_dim);
      std::vector<float> want(static_cast<size_t>(head_dim)), s1(kCtx);
      attend_reference(kv, 0, 1, 1, r.tokens[i].pos, r.q.data() + at, head_dim, scale, s1.data(),
                       want.data(), mask);
      ASSERT_EQ(std::memcmp(want.data(), r.got.data() + at, want.size() * sizeof(float)), 0)
          << what << " token " << i << " at pos " << r.tokens[i].pos << " head " << h;
    }
  }
}

TEST(AttentionTokens, QuantizedKvEveryWidthMatchesTheReferenceBitForBit) {
  const AttendMask masks[] = {{}, {4.0f, 0}, {0.0f, 17}};
  int runs = 0;
  for (KvType type : {KvType::kQ8_0, KvType::kQ4_0}) {
    for (const KernelSet* kernels : runnable_kernel_sets()) {
      for (int32_t lanes : {8, 16}) {
        for (int32_t head_dim : {32, 64, 128}) {
          for (int32_t group : {1, 3, 8}) {
            const KvStore kv = random_kv(type, head_dim, static_cast<uint32_t>(head_dim + group));
            Lcg rng{static_cast<uint32_t>(lanes * 5 + head_dim + group)};
            std::vector<float> scratch(attend_tokens_scratch_floats(8, group, kCtx, head_dim));
            for (const AttendMask& mask : masks) {
              for (const auto& positions : position_sets()) {
                Queries r = make_queries(positions, group, head_dim, rng);
                if (!attend_tokens_with(*kernels, lanes, kv, 0, 1, 1, group, r.tokens, head_dim,
                                        0.125f, scratch.data(), mask)) {
                  continue;
                }
                ++runs;
                expect_reference_bits(kv, r, group, head_dim, 0.125f, mask,
                                      std::string(kv_type_name(type)) + " " + kernels->isa +
                                          " lanes " + std::to_string(lanes) + " head_dim " +
                                          std::to_string(head_dim) + " group " +
                                          std::to_string(group) + " window " +
                                          std::to_string(mask.window));
                if (HasFatalFailure()) return;
              }
            }
          }
        }
      }
    }
  }
  if (runs == 0) GTEST_SKIP() << "SKIPPED: no kernel table here has SIMD attention";
}

TEST(AttentionTokens, QuantizedKvDispatchMatchesTheReference) {
  for (KvType type : {KvType::kQ8_0, KvType::kQ4_0}) {
    const int32_t head_dim = 64, group = 4;
    const KvStore kv = random_kv(type, head_dim, 11);
    Lcg rng{7};
    Queries r = make_queries({100, 101, 102}, group, head_dim, rng);
    std::vector<float> scratch(attend_tokens_scratch_floats(8, group, kCtx, head_dim));
    attend_tokens(kv, 0, 1, 1, group, r.tokens, head_dim, 0.125f, scratch.data());
    expect_reference_bits(kv, r, group, head_dim, 0.125f, {}, kv_type_name(type));
  }
}

// The definition reads each block as llama.cpp's dequantize does (scale, element order,
// Q4_0's nibbles and offset): its output is attention over the dequantized rows, up to
// the F16 rounding of the probabilities.
TEST(AttentionTokens, QuantizedKvMeansAttentionOverTheDequantizedRows) {
  for (KvType type : {KvType::kQ8_0, KvType::kQ4_0}) {
    const int32_t head_dim = 64;
    const KvStore kv = random_kv(type, head_dim, 3);
    Lcg rng{5};
    std::vector<float> q(static_cast<size_t>(head_dim));
    for (float& x : q) x = fp16_to_fp32(fp32_to_fp16(rng.next()));
    for (int32_t pos : {0, 31, kCtx - 1}) {
      std::vector<float> got(static_cast<size_t>(head_dim)), s(kCtx);
      attend_reference(kv, 0, 1, 1, pos, q.data(), head_dim, 0.125f, s.data(), got.data());
      std::vector<std::vector<float>> k(static_cast<size_t>(pos + 1)), v(k.size());
      std::vector<double> w(k.size());
      double max = -1e30, sum = 0.0;
      for (int32_t p = 0; p <= pos; ++p) {
        std::vector<float> kr(static_cast<size_t>(kKvHeads * head_dim)), vr(kr.size());
        dequantize_row(tensor_type(type), kv.k_bytes(0, 1, p), kr.data(), kKvHeads * head_dim);
        dequantize_row(tensor_type(type), kv.v_bytes(0, 1, p), vr.data(), kKvHeads * head_dim);
        k[static_cast<size_t>(p)].assign(kr.begin() + head_dim, kr.end());  // KV head 1
        v[static_cast<size_t>(p)].assign(vr.begin() + head_dim, vr.end());
        double dot = 0.0;
        for (int32_t d = 0; d < head_dim; ++d) dot += double{q[d]} * k[p][d];
        w[static_cast<size_t>(p)] = dot * 0.125;
        max = std::max(max, w[static_cast<size_t>(p)]);
      }
      for (double& x : w) sum += (x = std::exp(x - max));
      for (int32_t d = 0; d < head_dim; ++d) {
        double want = 0.0;
        for (int32_t p = 0; p <= pos; ++p) want += w[static_cast<size_t>(p)] / sum * v[p][d];
        EXPECT_NEAR(got[static_cast<size_t>(d)], want, 2e-3 * (1.0 + std::fabs(want)))
            << kv_type_name(type) << " pos " << pos << " d " << d;
      }
    }
  }
}

}  // namespace
}  // namespace hearth::engine
