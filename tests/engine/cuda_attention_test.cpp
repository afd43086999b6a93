// GPU attention (engine/cuda/layer_ops.h attention) against the CPU definition
// (engine::attend_reference on a KvStore holding the same F16 rows), and its batch
// invariance: a token's output has the same bits alone, in a batch of 7 and in a batch
// of 300 (which takes the other P.V path) beside tokens of other sequences and other
// positions. HEARTH_GPU_BENCH=1 adds timings. Every test skips without a usable GPU.
#include <gtest/gtest.h>

#if HEARTH_HAVE_CUDA

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "attention_test_util.h"
#include "cuda_test_util.h"
#include "engine/cuda/layer_ops.h"
#include "engine/model/attention.h"
#include "engine/model/kv_store.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine::cuda {
namespace {

using namespace testing;

// The device layout the tests use: per sequence, n_ctx K rows then n_ctx V rows.
KvLayer layout(int32_t n_ctx, int32_t kv_dim) {
  KvLayer kv;
  kv.kv_dim = kv_dim;
  kv.v_offset = static_cast<int64_t>(n_ctx) * kv_dim;
  kv.seq_stride = 2 * kv.v_offset;
  return kv;
}

std::vector<uint16_t> random_f16(size_t n, uint32_t seed, float scale) {
  Lcg rng{seed};
  std::vector<uint16_t> v(n);
  for (uint16_t& h : v) h = fp32_to_fp16(rng.next() * scale);
  return v;
}

struct Shape {
  int32_t n_head, n_head_kv, head_dim, n_ctx;
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(head_dim)); }
  int32_t kv_dim() const { return n_head_kv * head_dim; }
  std::string str() const {
    return "n_head " + std::to_string(n_head) + " n_head_kv " + std::to_string(n_head_kv) +
           " head_dim " + std::to_string(head_dim) + " n_ctx " + std::to_string(n_ctx);
  }
};

class CudaAttention : public ::testing::Test {
 protected:
  void SetUp() override {
    HEARTH_REQUIRE_GPU();
    HEARTH_ASSERT_OK(stream_.create());
  }
  // Runs attention for tokens (seq[t], pos[t]) with queries q16 over the device KV in
  // dkv (layout()); out: T * n_head * head_dim floats.
  Error run(const Shape& s, const DeviceBuffer& dkv, const std::vector<int32_t>& seq,
            const std::vector<int32_t>& pos, const std::vector<uint16_t>& q16,
            std::vector<float>* out) {
    const int64_t T = static_cast<int64_t>(seq.size());
    DeviceBuffer dq, ds, dp, dout, scratch;
    if (Error e = upload(q16, stream_, &dq); !e.empty()) return e;
    if (Error e = upload(seq, stream_, &ds); !e.empty()) return e;
    if (Error e = upload(pos, stream_, &dp); !e.empty()) return e;
    const size_t n_out = static_cast<size_t>(T) * s.n_head * s.head_dim;
    if (Error e = poisoned<float>(n_out, stream_, &dout); !e.empty()) return e;
    const size_t sb = attention_scratch_bytes(T, s.n_head, s.n_ctx);
    if (Error e = poisoned<char>(sb, stream_, &scratch); !e.empty()) return e;
    KvLayer kv = layout(s.n_ctx, s.kv_dim());
    kv.k = dkv.as<uint16_t>();
    if (Error e = attention(dq.as<uint16_t>(), kv, ds.as<int32_t>(), dp.as<int32_t>(), T, s.n_head,
                            s.n_head_kv, s.head_dim, s.scale(), s.n_ctx, dout.as<float>(),
                            scratch.data(), sb, stream_);
        !e.empty())
      return e;
    return download(dout, n_out, stream_, out);
  }
  void check_reference(const Shape& s, const std::vector<int32_t>& positions);
  Stream stream_;
};

// Tokens of one sequence at `positions` in one call (chunk-parallel P.V when few), and
// the same tokens repeated until the call takes the per-token P.V loop: both within the
// tolerance of attend_reference, and bit-identical to each other.
void CudaAttention::check_reference(const Shape& s, const std::vector<int32_t>& positions) {
  const int32_t head_dim = s.head_dim, group = s.n_head / s.n_head_kv;
  const int32_t max_pos = *std::max_element(positions.begin(), positions.end());
  const int64_t per_call = static_cast<int64_t>(positions.size()) * s.n_head;
  const int repeats = static_cast<int>(512 / per_call + 1);
  SCOPED_TRACE(s.str());
  const int32_t kv_dim = s.kv_dim();
  KvStore cpu = KvStore::create(1, 1, s.n_ctx, kv_dim, KvType::kF16, {}, head_dim).value();
  const KvLayer lay = layout(s.n_ctx, kv_dim);
  std::vector<uint16_t> host(static_cast<size_t>(lay.seq_stride), 0);
  Lcg rng{static_cast<uint32_t>(head_dim * 10 + group + max_pos)};
  for (int32_t p = 0; p <= max_pos; ++p) {
    std::vector<uint16_t> k(static_cast<size_t>(kv_dim)), v(k.size());
    for (int32_t e = 0; e < kv_dim; ++e) {
      const auto i = static_cast<size_t>(e);
      k[i] = fp32_to_fp16(rng.next());
      v[i] = fp32_to_fp16(rng.next());
      host[static_cast<size_t>(p) * kv_dim + e] = k[i];
      host[lay.v_offset + static_cast<size_t>(p) * kv_dim + e] = v[i];
    }
    cpu.put_k(0, 0, p, k.data());
    cpu.put_v(0, 0, p, v.data());
  }
  DeviceBuffer dkv;
  HEARTH_ASSERT_OK(upload(host, stream_, &dkv));
  const size_t q_row = static_cast<size_t>(s.n_head) * head_dim;
  // Queries up to 4 in size: scores spread over a few units, a real softmax.
  const auto q16 =
      random_f16(positions.size() * q_row, 99u + head_dim + group + positions[0], 4.0f);

  std::vector<float> want(positions.size() * q_row), scores(s.n_ctx), qf(head_dim);
  for (size_t t = 0; t < positions.size(); ++t) {
    for (int32_t h = 0; h < s.n_head; ++h) {
      const size_t off = t * q_row + static_cast<size_t>(h) * head_dim;
      for (int32_t d = 0; d < head_dim; ++d) qf[d] = fp16_to_fp32(q16[off + d]);
      attend_reference(cpu, 0, 0, h / group, positions[t], qf.data(), head_dim, s.scale(),
                       scores.data(), want.data() + off);
    }
  }
  std::vector<float> got;
  HEARTH_ASSERT_OK(run(s, dkv, std::vector<int32_t>(positions.size(), 0), positions, q16, &got));
  // Tolerance: 2e-4 absolute + 1e-3 relative (outputs are averages of values in
  // [-1, 1)); in practice the chunked sums differ from the CPU's by ~1e-7.
  for (size_t t = 0; t < positions.size(); ++t) {
    const std::vector<float> w(want.begin() + t * q_row, want.begin() + (t + 1) * q_row);
    const std::vector<float> g(got.begin() + t * q_row, got.begin() + (t + 1) * q_row);
    size_t same = 0;
    for (size_t i = 0; i < w.size(); ++i) same += bits_of(w[i]) == bits_of(g[i]);
    std::printf("attention %s pos %d: %zu of %zu bit-identical to the CPU\n", s.str().c_str(),
                positions[t], same, w.size());
    EXPECT_EQ(tol_mismatch(w, g, 2e-4, 1e-3,
                           "pos " + std::to_string(positions[t]) + " (index = head * " +
                               std::to_string(head_dim) + " + d)"),
              "");
  }
  // The same tokens `repeats` times over: the per-token P.V path, the same bits.
  std::vector<int32_t> pos_rep, seq_rep;
  std::vector<uint16_t> q_rep;
  for (int r = 0; r < repeats; ++r) {
    pos_rep.insert(pos_rep.end(), positions.begin(), positions.end());
    q_rep.insert(q_rep.end(), q16.begin(), q16.end());
  }
  seq_rep.assign(pos_rep.size(), 0);
  ASSERT_GT(static_cast<int64_t>(pos_rep.size()) * s.n_head, 512) << "must take the P.V loop";
  std::vector<float> got_rep;
  HEARTH_ASSERT_OK(run(s, dkv, seq_rep, pos_rep, q_rep, &got_rep));
  for (int r = 0; r < repeats; ++r) {
    const std::vector<float> g(got_rep.begin() + r * got.size(),
                               got_rep.begin() + (r + 1) * got.size());
    ASSERT_EQ(bit_mismatch(
                  got, g,
                  "repetition " + std::to_string(r) + " of T = " + std::to_string(pos_rep.size())),
              "");
  }
}

TEST_F(CudaAttention, MatchesCpuReference) {
  for (const int32_t head_dim : {64, 128}) {
    for (const int32_t group : {1, 4})
      check_reference({4 * group, 4, head_dim, 4352}, {1, 37, 300, 4100});
  }
}

// The other block shapes (8 heads per block, 1 head per block for an odd group), the
// largest and an odd head_dim, and the last position of a 32k context.
TEST_F(CudaAttention, OtherShapesMatchCpuReference) {
  check_reference({8, 1, 256, 9216}, {0, 511, 9000});
  check_reference({6, 2, 96, 1024}, {2, 255, 256, 700});
  check_reference({4, 2, 32, 32768}, {32767, 5});
}

// One token's output alone, in a batch of 7 and in a batch of 300 with tokens of other
// sequences at other (longer and shorter) positions: identical bits. The real shape of
// a GQA model (32 heads, 8 KV heads, head_dim 128).
TEST_F(CudaAttention, BatchInvariant) {
  const Shape s{32, 8, 128, 4352};
  const int32_t n_seq = 3;
  const KvLayer lay = layout(s.n_ctx, s.kv_dim());
  const auto host = random_f16(static_cast<size_t>(n_seq) * lay.seq_stride, 7u, 1.0f);
  DeviceBuffer dkv;
  HEARTH_ASSERT_OK(upload(host, stream_, &dkv));
  const size_t q_row = static_cast<size_t>(s.n_head) * s.head_dim;
  struct Target {
    int32_t seq, pos;
  };
  for (const Target target : {Target{1, 300}, Target{2, 4100}, Target{0, 5}, Target{1, 255}}) {
    SCOPED_TRACE("seq " + std::to_string(target.seq) + " pos " + std::to_string(target.pos));
    const auto q_target = random_f16(q_row, 500u + target.pos, 4.0f);
    std::vector<float> alone;
    HEARTH_ASSERT_OK(run(s, dkv, {target.seq}, {target.pos}, q_target, &alone));
    for (const int32_t T : {7, 300}) {
      const int32_t at = T / 2;
      Lcg rng{static_cast<uint32_t>(T * 31 + target.pos)};
      std::vector<int32_t> seq(T), pos(T);
      for (int32_t t = 0; t < T; ++t) {
        seq[t] = static_cast<int32_t>((rng.next() + 1.0f) * 1.5f) % n_seq;
        pos[t] = static_cast<int32_t>((rng.next() + 1.0f) * 0.5f * (s.n_ctx - 1));
      }
      seq[at] = target.seq;
      pos[at] = target.pos;
      auto q = random_f16(T * q_row, 600u + T, 4.0f);
      std::copy(q_target.begin(), q_target.end(), q.begin() + at * q_row);
      std::vector<float> batch;
      HEARTH_ASSERT_OK(run(s, dkv, seq, pos, q, &batch));
      const std::vector<float> mine(batch.begin() + at * q_row, batch.begin() + (at + 1) * q_row);
      EXPECT_EQ(bit_mismatch(alone, mine, "token in a batch of " + std::to_string(T)), "");
    }
  }
}

// Bad shapes are refused with the field named, before any device work (no GPU needed).
TEST(CudaAttentionArgs, RejectsBadShapesNamingTheField) {
  Stream none;
  KvLayer kv = layout(256, 256);
  alignas(16) static uint16_t fake[8];
  kv.k = fake;
  const auto call = [&](int32_t n_head, int32_t n_head_kv, int32_t head_dim, size_t sb) {
    return attention(nullptr, kv, nullptr, nullptr, 1, n_head, n_head_kv, head_dim, 1.0f, 256,
                     nullptr, sb ? fake : nullptr, sb, none);
  };
  EXPECT_NE(call(4, 2, 48, 1 << 30).find("head_dim"), std::string::npos);
  EXPECT_NE(call(4, 2, 512, 1 << 30).find("head_dim"), std::string::npos);
  EXPECT_NE(call(6, 4, 64, 1 << 30).find("n_head"), std::string::npos);
  EXPECT_NE(call(4, 0, 64, 1 << 30).find("n_head_kv"), std::string::npos);
  EXPECT_NE(call(4, 2, 64, 16).find("scratch_bytes"), std::string::npos);
  kv.seq_stride = 3;
  EXPECT_NE(call(4, 2, 64, 1 << 30).find("seq_stride"), std::string::npos);
}

// Scratch sized for the largest T also serves every smaller T of the same call shape.
TEST(CudaAttentionArgs, ScratchBytesGrowWithT) {
  for (const int32_t n_head : {8, 32, 64}) {
    size_t prev = 0;
    for (int64_t T = 1; T <= 600; ++T) {
      const size_t b = attention_scratch_bytes(T, n_head, 32768);
      ASSERT_GE(b, prev) << "T " << T << " n_head " << n_head;
      prev = b;
    }
  }
}

// HEARTH_GPU_BENCH=1: decode attention at 1k / 4k / 16k positions, 8 decoding tokens at 4k, a
// 512-token prefill (32 heads, 8 KV heads, head_dim 128); one line each.
TEST_F(CudaAttention, Bench) {
  if (!bench_enabled()) GTEST_SKIP() << "set HEARTH_GPU_BENCH=1";
  const Shape base{32, 8, 128, 16384};
  const size_t q_row = static_cast<size_t>(base.n_head) * base.head_dim;
  const KvLayer lay = layout(base.n_ctx, base.kv_dim());
  DeviceBuffer dkv;
  HEARTH_ASSERT_OK(
      upload(random_f16(static_cast<size_t>(lay.seq_stride), 3u, 1.0f), stream_, &dkv));
  KvLayer kv = lay;
  kv.k = dkv.as<uint16_t>();
  struct Case {
    const char* name;
    int32_t first_pos, T;
  };
  for (const Case c : {Case{"decode 1k", 1023, 1}, Case{"decode 4k", 4095, 1},
                       Case{"decode 16k", 16383, 1}, Case{"decode 8 tokens at 4k", 4088, 8},
                       Case{"prefill 512 at 0", 0, 512}, Case{"prefill 512 at 3584", 3584, 512}}) {
    std::vector<int32_t> seq(c.T, 0), pos(c.T);
    double kv_bytes = 0, flops = 0;
    for (int32_t t = 0; t < c.T; ++t) {
      pos[t] = c.first_pos + t;
      kv_bytes += (pos[t] + 1.0) * base.kv_dim() * 2 * 2;  // the K and V rows it reads
      flops += (pos[t] + 1.0) * base.head_dim * 4.0 * base.n_head;
    }
    DeviceBuffer dq, ds, dp, dout, scratch;
    HEARTH_ASSERT_OK(upload(random_f16(c.T * q_row, 5u, 4.0f), stream_, &dq));
    HEARTH_ASSERT_OK(upload(seq, stream_, &ds));
    HEARTH_ASSERT_OK(upload(pos, stream_, &dp));
    HEARTH_ASSERT_OK(poisoned<float>(c.T * q_row, stream_, &dout));
    const size_t sb = attention_scratch_bytes(c.T, base.n_head, base.n_ctx);
    HEARTH_ASSERT_OK(scratch.allocate(sb));
    float ms = 0;
    HEARTH_ASSERT_OK(median_ms(
        stream_, 20,
        [&] {
          return attention(dq.as<uint16_t>(), kv, ds.as<int32_t>(), dp.as<int32_t>(), c.T,
                           base.n_head, base.n_head_kv, base.head_dim, base.scale(), base.n_ctx,
                           dout.as<float>(), scratch.data(), sb, stream_);
        },
        &ms));
    std::printf(
        "BENCH attention %-22s T %3d: %8.4f ms  KV read %7.1f GB/s (K and V once per token)  "
        "%6.2f TFLOP/s\n",
        c.name, c.T, ms, kv_bytes / ms / 1e6, flops / ms / 1e9);
  }
}

}  // namespace
}  // namespace hearth::engine::cuda

#else  // !HEARTH_HAVE_CUDA

TEST(CudaAttention, Skipped) {
  GTEST_SKIP() << "built without CUDA";
}

#endif
