// The GPU's element-wise layer ops (engine/cuda/layer_ops.h) against the CPU
// definitions they mirror: RoPE, SiLU, the adds, the gathers and the F16 rounding bit
// for bit; the norms within one ulp (their double sums run in a different, fixed,
// order). Every test skips without a usable GPU.
#include <gtest/gtest.h>

#if HEARTH_HAVE_CUDA

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "attention_test_util.h"
#include "cuda_test_util.h"
#include "engine/cuda/layer_ops.h"
#include "engine/model/activation.h"
#include "engine/model/norm.h"
#include "engine/model/rope.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine::cuda {
namespace {

using namespace testing;

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  Lcg rng{seed};
  std::vector<float> v(n);
  for (float& f : v) f = rng.next() * scale;
  return v;
}

// The norms' result within max_ulp of the CPU's, reporting the first row and column.
void expect_within_ulps(const std::vector<float>& want, const std::vector<float>& got, int32_t n,
                        int64_t max_ulp, const char* what) {
  ASSERT_EQ(want.size(), got.size());
  size_t exact = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const int64_t d = ulp_distance(want[i], got[i]);
    exact += d == 0;
    ASSERT_LE(d, max_ulp) << what << ": token " << i / n << " index " << i % n << " (n " << n
                          << "): want " << want[i] << " got " << got[i];
  }
  std::printf("%s: %zu of %zu bit-identical to the CPU\n", what, exact, want.size());
}

class CudaLayerOps : public ::testing::Test {
 protected:
  void SetUp() override {
    HEARTH_REQUIRE_GPU();
    HEARTH_ASSERT_OK(stream_.create());
  }
  Stream stream_;
};

TEST_F(CudaLayerOps, RmsNormAndAddRmsNormWithinOneUlpOfCpu) {
  for (const int32_t n : {4096, 1000, 64}) {
    const int64_t T = 5;
    const float eps = 1e-5f;
    const auto x = random_floats(static_cast<size_t>(T) * n, 11u + n, 3.0f);
    const auto p = random_floats(static_cast<size_t>(T) * n, 12u + n);
    const auto w = random_floats(static_cast<size_t>(n), 13u + n);
    DeviceBuffer dx, dp, dw, dy;
    HEARTH_ASSERT_OK(upload(x, stream_, &dx));
    HEARTH_ASSERT_OK(upload(p, stream_, &dp));
    HEARTH_ASSERT_OK(upload(w, stream_, &dw));
    HEARTH_ASSERT_OK(poisoned<float>(x.size(), stream_, &dy));
    HEARTH_ASSERT_OK(rms_norm(dx.as<float>(), dw.as<float>(), n, eps, T, dy.as<float>(), stream_));
    std::vector<float> got, want(x.size());
    HEARTH_ASSERT_OK(download(dy, x.size(), stream_, &got));
    for (int64_t t = 0; t < T; ++t)
      engine::rms_norm(x.data() + t * n, w.data(), n, eps, want.data() + t * n);
    expect_within_ulps(want, got, n, 1, ("rms_norm n " + std::to_string(n)).c_str());

    // Fused: x += p (bit-exact float adds), then the norm of the sum.
    HEARTH_ASSERT_OK(poisoned<float>(x.size(), stream_, &dy));
    HEARTH_ASSERT_OK(add_rms_norm(dx.as<float>(), dp.as<float>(), dw.as<float>(), n, eps, T,
                                  dy.as<float>(), stream_));
    std::vector<float> got_x, sum(x.size());
    HEARTH_ASSERT_OK(download(dx, x.size(), stream_, &got_x));
    HEARTH_ASSERT_OK(download(dy, x.size(), stream_, &got));
    for (size_t i = 0; i < x.size(); ++i) sum[i] = x[i] + p[i];
    ASSERT_EQ(bit_mismatch(sum, got_x, "add_rms_norm's residual x + p"), "");
    for (int64_t t = 0; t < T; ++t)
      engine::rms_norm(sum.data() + t * n, w.data(), n, eps, want.data() + t * n);
    expect_within_ulps(want, got, n, 1, ("add_rms_norm n " + std::to_string(n)).c_str());
  }
}

TEST_F(CudaLayerOps, HeadRmsNormWithinOneUlpOfCpu) {
  const int32_t n_heads = 6, head_dim = 128;
  const int64_t T = 3;
  const float eps = 1e-6f;
  const auto x = random_floats(static_cast<size_t>(T) * n_heads * head_dim, 21u, 2.0f);
  const auto w = random_floats(head_dim, 22u);
  DeviceBuffer dx, dw;
  HEARTH_ASSERT_OK(upload(x, stream_, &dx));
  HEARTH_ASSERT_OK(upload(w, stream_, &dw));
  HEARTH_ASSERT_OK(
      head_rms_norm(dx.as<float>(), dw.as<float>(), n_heads, head_dim, eps, T, stream_));
  std::vector<float> got, want(x.size());
  HEARTH_ASSERT_OK(download(dx, x.size(), stream_, &got));
  for (size_t r = 0; r < x.size() / head_dim; ++r)
    engine::rms_norm(x.data() + r * head_dim, w.data(), head_dim, eps, want.data() + r * head_dim);
  expect_within_ulps(want, got, head_dim, 1, "head_rms_norm");
}

TEST_F(CudaLayerOps, AddAndAddBiasBitExact) {
  const int32_t n = 333;
  const int64_t T = 7;
  const auto x = random_floats(static_cast<size_t>(T) * n, 31u);
  const auto p = random_floats(x.size(), 32u);
  const auto b = random_floats(n, 33u);
  DeviceBuffer dx, dp, db;
  HEARTH_ASSERT_OK(upload(x, stream_, &dx));
  HEARTH_ASSERT_OK(upload(p, stream_, &dp));
  HEARTH_ASSERT_OK(upload(b, stream_, &db));
  HEARTH_ASSERT_OK(add(dx.as<float>(), dp.as<float>(), static_cast<int64_t>(x.size()), stream_));
  HEARTH_ASSERT_OK(add_bias(dx.as<float>(), db.as<float>(), n, T, stream_));
  std::vector<float> got, want(x.size());
  HEARTH_ASSERT_OK(download(dx, x.size(), stream_, &got));
  for (size_t i = 0; i < x.size(); ++i) want[i] = (x[i] + p[i]) + b[i % n];
  EXPECT_EQ(bit_mismatch(want, got, "add then add_bias"), "");
}

TEST_F(CudaLayerOps, RopeBitExactWithCpu) {
  const int32_t n_heads = 5, head_dim = 128;
  const std::vector<int32_t> positions = {0, 1, 37, 4100, 32767};
  const int64_t T = static_cast<int64_t>(positions.size());
  for (const bool neox : {false, true}) {
    for (const int32_t n_rot : {128, 64}) {
      const auto x = random_floats(static_cast<size_t>(T) * n_heads * head_dim, 41u + n_rot, 4.0f);
      std::vector<float> cs(static_cast<size_t>(T) * n_rot);
      for (int64_t t = 0; t < T; ++t)
        rope_angles(positions[t], n_rot, 10000.0f, 1.0f, nullptr, cs.data() + t * n_rot);
      DeviceBuffer dx, dcs;
      HEARTH_ASSERT_OK(upload(x, stream_, &dx));
      HEARTH_ASSERT_OK(upload(cs, stream_, &dcs));
      HEARTH_ASSERT_OK(
          rope(dx.as<float>(), n_heads, head_dim, n_rot, dcs.as<float>(), neox, T, stream_));
      std::vector<float> got, want = x;
      HEARTH_ASSERT_OK(download(dx, x.size(), stream_, &got));
      for (int64_t t = 0; t < T; ++t)
        rope_apply(want.data() + t * n_heads * head_dim, n_heads, head_dim, n_rot,
                   cs.data() + t * n_rot, neox);
      EXPECT_EQ(bit_mismatch(want, got,
                             std::string("rope neox ")
                                 .append(neox ? "1" : "0")
                                 .append(" n_rot ")
                                 .append(std::to_string(n_rot))),
                "");
    }
  }
}

TEST_F(CudaLayerOps, SiluMulBitExactWithCpu) {
  const size_t n = 100003;
  auto g = random_floats(n, 51u, 30.0f);  // g[1], g[2]: past the exp clamps (-87, 88)
  const auto u = random_floats(n, 52u, 2.0f);
  g[0] = 0.0f;
  g[1] = -100.0f;
  g[2] = 100.0f;
  g[3] = 1e-30f;
  DeviceBuffer dg, du;
  HEARTH_ASSERT_OK(upload(g, stream_, &dg));
  HEARTH_ASSERT_OK(upload(u, stream_, &du));
  HEARTH_ASSERT_OK(silu_mul(dg.as<float>(), du.as<float>(), static_cast<int64_t>(n), stream_));
  std::vector<float> got, want = g;
  HEARTH_ASSERT_OK(download(dg, n, stream_, &got));
  engine::silu_mul(want.data(), u.data(), static_cast<int64_t>(n));
  EXPECT_EQ(bit_mismatch(want, got, "silu_mul"), "");
}

TEST_F(CudaLayerOps, GatherRowsCopiesThePickedRows) {
  const int32_t n = 100;
  const auto x = random_floats(10 * n, 61u);
  const std::vector<int32_t> idx = {9, 0, 3, 3, 7};
  DeviceBuffer dx, di, dout;
  HEARTH_ASSERT_OK(upload(x, stream_, &dx));
  HEARTH_ASSERT_OK(upload(idx, stream_, &di));
  HEARTH_ASSERT_OK(poisoned<float>(idx.size() * n, stream_, &dout));
  HEARTH_ASSERT_OK(gather_rows(dx.as<float>(), di.as<int32_t>(), static_cast<int64_t>(idx.size()),
                               n, dout.as<float>(), stream_));
  std::vector<float> got, want;
  HEARTH_ASSERT_OK(download(dout, idx.size() * n, stream_, &got));
  for (const int32_t r : idx) want.insert(want.end(), x.begin() + r * n, x.begin() + (r + 1) * n);
  EXPECT_EQ(bit_mismatch(want, got, "gather_rows"), "");
}

TEST_F(CudaLayerOps, StoreKvAndRoundQMatchesFp16Rounding) {
  const int32_t q_dim = 96, kv_dim = 64, n_ctx = 8, n_seq = 3;
  const std::vector<int32_t> seq = {2, 0, 2}, pos = {5, 7, 0};
  const int64_t T = 3;
  for (const float q_scale : {1.0f, 0.125f}) {
    const auto q = random_floats(T * q_dim, 71u, 70000.0f);  // some overflow F16
    const auto k = random_floats(T * kv_dim, 72u, 1e-3f);    // some subnormal
    const auto v = random_floats(T * kv_dim, 73u, 10.0f);
    DeviceBuffer dq, dk, dv, ds, dp, dkv, dq16;
    HEARTH_ASSERT_OK(upload(q, stream_, &dq));
    HEARTH_ASSERT_OK(upload(k, stream_, &dk));
    HEARTH_ASSERT_OK(upload(v, stream_, &dv));
    HEARTH_ASSERT_OK(upload(seq, stream_, &ds));
    HEARTH_ASSERT_OK(upload(pos, stream_, &dp));
    KvLayer kv;
    kv.kv_dim = kv_dim;
    kv.v_offset = static_cast<int64_t>(n_ctx) * kv_dim;
    kv.seq_stride = 2 * kv.v_offset;
    const size_t kv_elems = static_cast<size_t>(n_seq) * kv.seq_stride;
    HEARTH_ASSERT_OK(poisoned<uint16_t>(kv_elems, stream_, &dkv));
    HEARTH_ASSERT_OK(poisoned<uint16_t>(T * q_dim, stream_, &dq16));
    kv.k = dkv.as<uint16_t>();
    HEARTH_ASSERT_OK(store_kv_and_round_q(dq.as<float>(), dk.as<float>(), dv.as<float>(),
                                          ds.as<int32_t>(), dp.as<int32_t>(), T, q_dim, q_scale, kv,
                                          dq16.as<uint16_t>(), stream_));
    std::vector<uint16_t> got_kv, got_q;
    HEARTH_ASSERT_OK(download(dkv, kv_elems, stream_, &got_kv));
    HEARTH_ASSERT_OK(download(dq16, T * q_dim, stream_, &got_q));
    for (int64_t i = 0; i < T * q_dim; ++i)
      ASSERT_EQ(got_q[i], fp32_to_fp16(q[i] * q_scale))
          << "q16 index " << i << " q " << q[i] << " q_scale " << q_scale;
    std::vector<uint16_t> want_kv(kv_elems, 0xFFFF);
    for (int64_t t = 0; t < T; ++t) {
      const int64_t row = seq[t] * kv.seq_stride + static_cast<int64_t>(pos[t]) * kv_dim;
      for (int32_t e = 0; e < kv_dim; ++e) {
        want_kv[row + e] = fp32_to_fp16(k[t * kv_dim + e]);
        want_kv[row + kv.v_offset + e] = fp32_to_fp16(v[t * kv_dim + e]);
      }
    }
    for (size_t i = 0; i < kv_elems; ++i)
      ASSERT_EQ(got_kv[i], want_kv[i]) << "KV element " << i << " (seq " << i / kv.seq_stride
                                       << ", 0xFFFF: must stay unwritten)";
  }
}

// HEARTH_GPU_BENCH=1: the bandwidth of the norm and SwiGLU over a 512-token batch.
TEST_F(CudaLayerOps, Bench) {
  if (!bench_enabled()) GTEST_SKIP() << "set HEARTH_GPU_BENCH=1";
  const int64_t T = 512;
  const int32_t n = 4096, n_ff = 11008;
  DeviceBuffer dx, dw, dy, dg, du;
  HEARTH_ASSERT_OK(upload(random_floats(T * n, 81u), stream_, &dx));
  HEARTH_ASSERT_OK(upload(random_floats(n, 82u), stream_, &dw));
  HEARTH_ASSERT_OK(poisoned<float>(T * n, stream_, &dy));
  HEARTH_ASSERT_OK(upload(random_floats(T * n_ff, 83u), stream_, &dg));
  HEARTH_ASSERT_OK(upload(random_floats(T * n_ff, 84u), stream_, &du));
  float ms = 0;
  HEARTH_ASSERT_OK(median_ms(
      stream_, 20,
      [&] {
        return rms_norm(dx.as<float>(), dw.as<float>(), n, 1e-5f, T, dy.as<float>(), stream_);
      },
      &ms));
  std::printf("BENCH rms_norm T %lld n %d: %8.4f ms %7.1f GB/s\n", static_cast<long long>(T), n, ms,
              2.0 * T * n * 4 / ms / 1e6);
  HEARTH_ASSERT_OK(median_ms(
      stream_, 20, [&] { return silu_mul(dg.as<float>(), du.as<float>(), T * n_ff, stream_); },
      &ms));
  std::printf("BENCH silu_mul T %lld n_ff %d: %8.4f ms %7.1f GB/s\n", static_cast<long long>(T),
              n_ff, ms, 3.0 * T * n_ff * 4 / ms / 1e6);
}

}  // namespace
}  // namespace hearth::engine::cuda

#else  // !HEARTH_HAVE_CUDA

TEST(CudaLayerOps, Skipped) {
  GTEST_SKIP() << "built without CUDA";
}

#endif
