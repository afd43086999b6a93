// The GPU matmul (src/engine/cuda/matmul.cu): every weight type against a double-precision
// CPU reference over the dequantized weights, the batch-invariance contract (the bits of a
// token's outputs alone, in a batch of 3, 7 and 300), the shape and scratch errors, and
// HEARTH_GPU_BENCH=1 timings. The GPU tests SKIP on a machine without a CUDA device.
#include <gtest/gtest.h>

#if HEARTH_HAVE_CUDA

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/cuda/matmul.h"
#include "quant_test_util.h"

namespace hearth::engine::cuda {
namespace {

using gguf::TensorType;
using hearth::engine::testing::bits;
using hearth::engine::testing::gaussian;
using hearth::engine::testing::random_blocks;

constexpr int32_t id(TensorType t) {
  return static_cast<int32_t>(t);
}

// matmul.cu spells these values itself (it cannot include the C++20 gguf header).
static_assert(id(TensorType::kF32) == 0 && id(TensorType::kF16) == 1 &&
              id(TensorType::kQ4_0) == 2 && id(TensorType::kQ4_1) == 3 &&
              id(TensorType::kQ5_0) == 6 && id(TensorType::kQ5_1) == 7 &&
              id(TensorType::kQ8_0) == 8 && id(TensorType::kQ4_K) == 12 &&
              id(TensorType::kQ5_K) == 13 && id(TensorType::kQ6_K) == 14 &&
              id(TensorType::kBF16) == 30);

const std::vector<TensorType>& gpu_types() {
  static const std::vector<TensorType> v = {TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0,
                                            TensorType::kQ5_1, TensorType::kQ8_0, TensorType::kQ4_K,
                                            TensorType::kQ5_K, TensorType::kQ6_K, TensorType::kF16,
                                            TensorType::kBF16, TensorType::kF32};
  return v;
}

bool is_float(TensorType t) {
  return t == TensorType::kF32 || t == TensorType::kF16 || t == TensorType::kBF16;
}

// Tolerances: Q8 activations (int8 per 32 values) leave ~0.3% relative error on a random
// dot; 1e-2 bounds it. Float weights keep float activations: fp32 accumulation, 1e-5.
double tolerance(TensorType t) {
  return is_float(t) ? 1e-5 : 1e-2;
}

#define REQUIRE_GPU()                               \
  do {                                              \
    std::string why_;                               \
    if (!available(0, &why_)) GTEST_SKIP() << why_; \
    ASSERT_EQ(set_device(0), "");                   \
  } while (0)

// Restores the tensor-core switch a test changes.
struct TensorCoresScope {
  explicit TensorCoresScope(bool on) : was(matmul_tensor_cores()) { set_matmul_tensor_cores(on); }
  ~TensorCoresScope() { set_matmul_tensor_cores(was); }
  bool was;
};

struct Shape {
  int64_t rows, cols;
};

struct HostMatrix {
  TensorType type = TensorType::kF32;
  int64_t rows = 0, cols = 0;
  size_t row_bytes = 0;
  std::vector<uint8_t> bytes;
};

// Random weights: through the engine's own quantizer (gaussian values) when `quantize`,
// else random blocks with sane scales (the whole bit space of the quant fields, and fast
// enough for the 32000-row shapes).
HostMatrix make_matrix(TensorType t, int64_t rows, int64_t cols, uint32_t seed, bool quantize) {
  HostMatrix m;
  m.type = t;
  m.rows = rows;
  m.cols = cols;
  m.row_bytes = quant_row_bytes(t, cols);
  if (!quantize) {
    m.bytes = random_blocks(t, rows * cols, seed);
    return m;
  }
  m.bytes.resize(m.row_bytes * static_cast<size_t>(rows));
  const std::vector<float> v = gaussian(static_cast<size_t>(rows * cols), seed, 0.5f);
  for (int64_t r = 0; r < rows; ++r) {
    const Status s = quantize_row(t, v.data() + r * cols, m.bytes.data() + r * m.row_bytes, cols);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  return m;
}

// x as the documented activation quantization leaves it (matmul.cu): per 32 values,
// d = amax / 127 and q = round_half_even(x * (1 / d)), then q * d in double.
std::vector<float> q8_activations(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (size_t b = 0; b + 32 <= x.size(); b += 32) {
    float amax = 0;
    for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b + i]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    for (size_t i = 0; i < 32; ++i) {
      out[b + i] = static_cast<float>(std::nearbyint(x[b + i] * id) * static_cast<double>(d));
    }
  }
  return out;
}

// ref[t * rows + r] = sum_k W[r][k] * x[t][k] in double over the dequantized weights.
std::vector<double> reference(const HostMatrix& m, const std::vector<float>& x, int64_t n) {
  std::vector<double> ref(static_cast<size_t>(n * m.rows));
  std::vector<float> row(static_cast<size_t>(m.cols));
  for (int64_t r = 0; r < m.rows; ++r) {
    dequantize_row(m.type, m.bytes.data() + r * m.row_bytes, row.data(), m.cols);
    for (int64_t t = 0; t < n; ++t) {
      const float* xt = x.data() + t * m.cols;
      double s = 0;
      for (int64_t k = 0; k < m.cols; ++k) s += static_cast<double>(row[k]) * xt[k];
      ref[t * m.rows + r] = s;
    }
  }
  return ref;
}

// Device buffers for one call: x, y (poisoned with 0xFF bytes, a NaN) and scratch.
struct Call {
  DeviceBuffer x, y, scratch;
};

Error run_matmul(const DeviceMatrix& w, const std::vector<float>& x, int64_t n, const Stream& s,
                 std::vector<float>* y) {
  Call c;
  const size_t xb = x.size() * sizeof(float), yb = static_cast<size_t>(n * w.rows) * sizeof(float);
  const size_t sb = matmul_scratch_bytes(n, w.cols, w.rows);
  if (Error e = c.x.allocate(xb); !e.empty()) return e;
  if (Error e = c.y.allocate(yb); !e.empty()) return e;
  if (Error e = c.scratch.allocate(sb); !e.empty()) return e;
  if (Error e = copy_to_device(c.x.data(), x.data(), xb, s); !e.empty()) return e;
  if (Error e = fill_device(c.y.data(), 0xFF, yb, s); !e.empty()) return e;
  if (Error e = fill_device(c.scratch.data(), 0xFF, sb, s); !e.empty()) return e;
  if (Error e = matmul(w, c.x.as<float>(), n, c.y.as<float>(), c.scratch.data(), sb, s);
      !e.empty()) {
    return e;
  }
  y->assign(static_cast<size_t>(n * w.rows), 0.0f);
  if (Error e = copy_to_host(y->data(), c.y.data(), yb, s); !e.empty()) return e;
  return s.sync();
}

std::string describe(TensorType t, int64_t rows, int64_t cols, int64_t n) {
  return std::string(quant_type_name(t))
      .append(" rows=")
      .append(std::to_string(rows))
      .append(" cols=")
      .append(std::to_string(cols))
      .append(" n_tokens=")
      .append(std::to_string(n));
}

// Per token: ||y - ref|| / ||ref|| < tol, every output finite; reports the worst element.
void expect_close(const std::vector<float>& y, const std::vector<double>& ref, int64_t rows,
                  int64_t n, double tol, const std::string& what) {
  for (int64_t t = 0; t < n; ++t) {
    double num = 0, den = 0, worst = -1;
    int64_t worst_r = -1;
    for (int64_t r = 0; r < rows; ++r) {
      const double got = y[t * rows + r], want = ref[t * rows + r];
      if (!std::isfinite(got)) {
        ADD_FAILURE() << what << ": y[t=" << t << "][r=" << r << "] = " << got
                      << " (unwritten or overflow), expected " << want;
        return;
      }
      num += (got - want) * (got - want);
      den += want * want;
      if (std::fabs(got - want) > worst) worst = std::fabs(got - want), worst_r = r;
    }
    const double rel = std::sqrt(num / std::max(den, 1e-300));
    EXPECT_LT(rel, tol) << what << ": token " << t << " relative error " << rel
                        << "; worst r=" << worst_r << " got " << y[t * rows + worst_r]
                        << " expected " << ref[t * rows + worst_r];
  }
}

// Both bounds: against the exact product (the activation quantization's error; only for
// quantizer-made weights, where 1e-2 holds) and against the exact product of the quantized
// activations (only the fp32 rounding of the block sums is left: 1e-5 for any weights).
void expect_matches_reference(const std::vector<float>& y, const HostMatrix& h,
                              const std::vector<float>& x, int64_t n, bool quantized_weights,
                              const std::string& what) {
  if (quantized_weights || is_float(h.type)) {
    expect_close(y, reference(h, x, n), h.rows, n, tolerance(h.type), what);
  }
  if (!is_float(h.type)) {
    expect_close(y, reference(h, q8_activations(x), n), h.rows, n, 1e-5,
                 std::string(what).append(" vs q8 activations"));
  }
}

// Whether a row is long enough (64 blocks or more) to average the activations' rounding down
// to the 1e-2 bound against the exact product: a dot of 32 or 384 terms can miss by 1-2%, so
// shorter rows are checked against the quantized activations only.
bool long_dot(int64_t cols) {
  return cols >= 2048;
}

std::vector<float> on_host(const HostMatrix& h, const std::vector<float>& x, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n * h.rows), std::nanf(""));
  const Error e = matmul_on_host(id(h.type), h.rows, h.cols, h.bytes.data(), h.row_bytes, x.data(),
                                 n, y.data());
  EXPECT_EQ(e, "");
  return y;
}

// The device's bits against matmul_on_host's: reports the first difference.
void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want, int64_t rows,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (bits(got[i]) != bits(want[i])) {
      ADD_FAILURE() << what << ": y[t=" << i / static_cast<size_t>(rows)
                    << "][r=" << i % static_cast<size_t>(rows) << "] = " << got[i] << " (0x"
                    << std::hex << bits(got[i]) << ") got, " << want[i] << " (0x" << bits(want[i])
                    << std::dec << ") expected (matmul_on_host)";
      return;
    }
  }
}

// The kernels' arithmetic, run on the host (no GPU needed), against the double reference:
// the device layouts, the block decoding and the segment order are checked here on any
// machine; the device tests then check the GPU against it bit for bit.
TEST(CudaMatmul, HostArithmeticMatchesTheDoubleReference) {
  struct Case {
    TensorType type;
    int64_t rows, cols;
  };
  std::vector<Case> cases;
  for (TensorType t : gpu_types()) {
    cases.push_back({t, 64, 256});
    cases.push_back({t, 37, 2304});
  }
  for (TensorType t : gpu_types()) {
    if (block_geometry(t).block_size != 32) continue;
    cases.push_back({t, 21, 2080});  // 65 blocks: a short last segment
    cases.push_back({t, 5, 32});     // one block
    cases.push_back({t, 11, 96});    // small-qwen3-q4_k_m's Q5_0 rows: one short segment
    cases.push_back({t, 11, 384});   // and its ffn_down: 1.5 segments
  }
  cases.push_back({TensorType::kF16, 9, 1000});
  cases.push_back({TensorType::kF32, 9, 8});
  uint32_t seed = 40;
  for (const Case& c : cases) {
    for (bool quantize : {true, false}) {
      const int64_t n = 3;
      const HostMatrix h = make_matrix(c.type, c.rows, c.cols, ++seed, quantize);
      const std::vector<float> x = gaussian(static_cast<size_t>(n * c.cols), ++seed);
      const std::string what = describe(c.type, c.rows, c.cols, n)
                                   .append(quantize ? " (quantized)" : " (random blocks)");
      expect_matches_reference(on_host(h, x, n), h, x, n, quantize && long_dot(c.cols), what);
    }
  }
}

// The host arithmetic in token tiles of 1 and 8 (as the device takes them): a token's bits
// alone and at positions 3 and 11 of batches of 7 and 13.
TEST(CudaMatmul, HostArithmeticIsBatchInvariant) {
  uint32_t seed = 300;
  for (TensorType t : gpu_types()) {
    const int64_t rows = 19, cols = block_geometry(t).block_size == 256 ? 2304 : 2336;
    const HostMatrix h = make_matrix(t, rows, cols, ++seed, true);
    const std::vector<float> token = gaussian(static_cast<size_t>(cols), ++seed);
    const std::vector<float> alone = on_host(h, token, 1);
    for (const auto& [n, pos] : std::vector<std::pair<int64_t, int64_t>>{{7, 3}, {13, 11}}) {
      std::vector<float> x = gaussian(static_cast<size_t>(n * cols), ++seed);
      std::copy(token.begin(), token.end(), x.begin() + pos * cols);
      const std::vector<float> y = on_host(h, x, n);
      const std::vector<float> mine(y.begin() + pos * rows, y.begin() + (pos + 1) * rows);
      expect_same_bits(mine, alone, rows, describe(t, rows, cols, n));
    }
  }
}

// The tensor-core kernel decodes the weight blocks with its own code (row_block, four lanes'
// shares of a fragment row): run on the host, it must give the __dp4a path's bits.
TEST(CudaMatmul, HostTensorCoreDecodeGivesTheSameBits) {
  uint32_t seed = 500;
  for (TensorType t : gpu_types()) {
    if (is_float(t)) continue;
    const bool k_quant = block_geometry(t).block_size == 256;
    for (const Shape& sh :
         std::vector<Shape>{{37, k_quant ? 2304 : 2080}, {5, k_quant ? 256 : 32}}) {
      for (bool quantize : {true, false}) {
        const int64_t n = 3;
        const HostMatrix h = make_matrix(t, sh.rows, sh.cols, ++seed, quantize);
        const std::vector<float> x = gaussian(static_cast<size_t>(n * sh.cols), ++seed);
        std::vector<float> y(static_cast<size_t>(n * sh.rows));
        ASSERT_EQ(matmul_on_host(id(t), h.rows, h.cols, h.bytes.data(), h.row_bytes, x.data(), n,
                                 y.data(), true),
                  "");
        expect_same_bits(y, on_host(h, x, n), h.rows,
                         describe(t, sh.rows, sh.cols, n).append(" tensor-core decode"));
      }
    }
  }
}

TEST(CudaMatmul, SupportsExactlyTheGpuWeightTypes) {
  for (TensorType t : gpu_types()) EXPECT_TRUE(matmul_supports(id(t))) << quant_type_name(t);
  for (TensorType t : {TensorType::kQ8_1, TensorType::kQ2_K, TensorType::kQ3_K, TensorType::kQ8_K,
                       TensorType::kI32, TensorType::kI8}) {
    EXPECT_FALSE(matmul_supports(id(t))) << quant_type_name(t);
  }
}

TEST(CudaMatmul, ScratchGrowsWithTokensAndHoldsTheQuantizedActivations) {
  for (int64_t cols : {256, 2048, 5632}) {
    size_t prev = 0;
    for (int64_t n : {1, 2, 7, 300}) {
      const size_t b = matmul_scratch_bytes(n, cols, 4096);
      // int8 activations + one float scale and one int sum per 32 values
      EXPECT_GE(b, static_cast<size_t>(n * cols + n * cols / 32 * 8)) << cols << " " << n;
      EXPECT_GT(b, prev) << cols << " " << n;
      prev = b;
    }
  }
}

// Shape errors are found before any CUDA call (they run without a device too).
TEST(CudaMatmul, UploadRejectsBadShapesNamingTheValue) {
  const std::vector<uint8_t> bytes(1 << 16, 0);
  Stream s;  // never used: every call below fails its checks first
  DeviceMatrix m;
  Error e = upload_matrix(id(TensorType::kQ3_K), 4, 256, bytes.data(), 110, s, &m);
  EXPECT_NE(e.find("type 11"), std::string::npos) << e;
  e = upload_matrix(id(TensorType::kQ5_1), 4, 80, bytes.data(), 100, s, &m);
  EXPECT_NE(e.find("cols 80"), std::string::npos) << e;
  e = upload_matrix(id(TensorType::kQ5_0), 4, 64, bytes.data(), 43, s, &m);
  EXPECT_NE(e.find("row_bytes 43"), std::string::npos) << e;
  e = upload_matrix(id(TensorType::kQ4_K), 4, 300, bytes.data(), 1000, s, &m);
  EXPECT_NE(e.find("cols 300"), std::string::npos) << e;
  e = upload_matrix(id(TensorType::kQ4_K), 0, 256, bytes.data(), 144, s, &m);
  EXPECT_NE(e.find("rows 0"), std::string::npos) << e;
  e = upload_matrix(id(TensorType::kQ6_K), 4, 512, bytes.data(), 419, s, &m);
  EXPECT_NE(e.find("row_bytes 419"), std::string::npos) << e;
  e = upload_matrix(id(TensorType::kF16), 4, 12, bytes.data(), 24, s, &m);
  EXPECT_NE(e.find("cols 12"), std::string::npos) << e;
  e = upload_matrix(id(TensorType::kQ8_0), 4, 64, nullptr, 68, s, &m);
  EXPECT_NE(e.find("null"), std::string::npos) << e;
}

TEST(CudaMatmul, MatmulRejectsAMatrixItCannotRead) {
  Stream s;
  DeviceMatrix m;
  m.type = id(TensorType::kQ4_K);
  m.rows = 8;
  m.cols = 512;  // no data: not made by upload_matrix
  float dummy[4] = {0, 0, 0, 0};
  Error e = matmul(m, dummy, 1, dummy, nullptr, 0, s);
  EXPECT_NE(e.find("too few"), std::string::npos) << e;
  m.type = id(TensorType::kQ2_K);
  e = matmul(m, dummy, 1, dummy, nullptr, 0, s);
  EXPECT_NE(e.find("type 10"), std::string::npos) << e;
  m.type = id(TensorType::kQ4_K);
  e = matmul(m, dummy, -1, dummy, nullptr, 0, s);
  EXPECT_NE(e.find("n_tokens -1"), std::string::npos) << e;
}

TEST(CudaMatmul, MatmulRejectsTooSmallScratch) {
  REQUIRE_GPU();
  Stream s;
  ASSERT_EQ(s.create(), "");
  const HostMatrix h = make_matrix(TensorType::kQ4_K, 16, 512, 7, false);
  DeviceMatrix w;
  ASSERT_EQ(upload_matrix(id(h.type), h.rows, h.cols, h.bytes.data(), h.row_bytes, s, &w), "");
  DeviceBuffer x, y, scratch;
  ASSERT_EQ(x.allocate(4 * 512 * sizeof(float)), "");
  ASSERT_EQ(y.allocate(4 * 16 * sizeof(float)), "");
  const size_t need = matmul_scratch_bytes(4, 512, 16);
  ASSERT_EQ(scratch.allocate(need), "");
  Error e = matmul(w, x.as<float>(), 4, y.as<float>(), scratch.data(), need - 1, s);
  EXPECT_NE(e.find("scratch_bytes " + std::to_string(need - 1)), std::string::npos) << e;
  e = matmul(w, x.as<float>(), 4, y.as<float>(), nullptr, need, s);
  EXPECT_NE(e.find("scratch_bytes 0"), std::string::npos) << e;
  EXPECT_EQ(s.sync(), "");
}

TEST(CudaMatmul, MatchesTheDoubleReferenceForEveryTypeAndShape) {
  REQUIRE_GPU();
  Stream s;
  ASSERT_EQ(s.create(), "");
  const std::vector<Shape> shapes = {{64, 256},    {300, 512},   {2048, 2048},
                                     {5632, 2048}, {2048, 5632}, {32000, 2048}};
  uint32_t seed = 100;
  for (TensorType t : gpu_types()) {
    for (const Shape& sh : shapes) {
      const bool quantize = sh.rows * sh.cols <= 2048 * 2048;
      const HostMatrix h = make_matrix(t, sh.rows, sh.cols, ++seed, quantize);
      const int64_t n = sh.rows >= 32000 ? 2 : 3;
      const std::vector<float> x = gaussian(static_cast<size_t>(n * sh.cols), ++seed);
      const std::string what = describe(t, sh.rows, sh.cols, n);
      DeviceMatrix w;
      ASSERT_EQ(upload_matrix(id(t), h.rows, h.cols, h.bytes.data(), h.row_bytes, s, &w), "")
          << what;
      std::vector<float> y;
      ASSERT_EQ(run_matmul(w, x, n, s, &y), "") << what;
      expect_matches_reference(y, h, x, n, quantize && long_dot(sh.cols), what);
      if (sh.rows * sh.cols <= 2048 * 2048) expect_same_bits(y, on_host(h, x, n), h.rows, what);
    }
  }
}

// Odd shapes: 32-element formats with rows of 65 blocks (a short last segment) or one block,
// float rows of 1000.
TEST(CudaMatmul, MatchesTheReferenceWithAShortLastSegment) {
  REQUIRE_GPU();
  Stream s;
  ASSERT_EQ(s.create(), "");
  const std::vector<std::pair<TensorType, int64_t>> cases = {
      {TensorType::kQ4_0, 2080}, {TensorType::kQ4_1, 2080}, {TensorType::kQ5_0, 2080},
      {TensorType::kQ5_1, 2080}, {TensorType::kQ8_0, 2080}, {TensorType::kQ4_0, 32},
      {TensorType::kQ5_1, 32},   {TensorType::kQ5_0, 96},   {TensorType::kQ5_0, 384},
      {TensorType::kF16, 1000},  {TensorType::kBF16, 1000}, {TensorType::kF32, 8}};
  uint32_t seed = 900;
  for (const auto& [t, cols] : cases) {
    for (int64_t n : {1, 5, 13}) {
      const HostMatrix h = make_matrix(t, 77, cols, ++seed, true);
      const std::vector<float> x = gaussian(static_cast<size_t>(n * cols), ++seed);
      const std::string what = describe(t, 77, cols, n);
      DeviceMatrix w;
      ASSERT_EQ(upload_matrix(id(t), h.rows, h.cols, h.bytes.data(), h.row_bytes, s, &w), "")
          << what;
      std::vector<float> y;
      ASSERT_EQ(run_matmul(w, x, n, s, &y), "") << what;
      expect_matches_reference(y, h, x, n, long_dot(cols), what);
      expect_same_bits(y, on_host(h, x, n), h.rows, what);
    }
  }
}

// The contract of matmul.h: token 0's outputs have the same bits alone and at positions 2,
// 3 and 211 of batches of 3, 7 and 300 other random tokens.
TEST(CudaMatmul, OutputsAreBitwiseIndependentOfTheBatch) {
  REQUIRE_GPU();
  Stream s;
  ASSERT_EQ(s.create(), "");
  uint32_t seed = 5000;
  for (bool tensor_cores : {false, true}) {
    const TensorCoresScope scope(tensor_cores);
    for (TensorType t : gpu_types()) {
      // K-quants: 9 super-blocks (16 lanes a row); others: 73 blocks, a short last segment.
      const int64_t rows = 333, cols = t == TensorType::kQ4_K || t == TensorType::kQ5_K ||
                                               t == TensorType::kQ6_K
                                           ? 2304
                                           : 2336;
      const HostMatrix h = make_matrix(t, rows, cols, ++seed, true);
      DeviceMatrix w;
      ASSERT_EQ(upload_matrix(id(t), h.rows, h.cols, h.bytes.data(), h.row_bytes, s, &w), "");
      const std::vector<float> token = gaussian(static_cast<size_t>(cols), ++seed);
      std::vector<float> alone;
      ASSERT_EQ(run_matmul(w, token, 1, s, &alone), "");
      for (const auto& [n, pos] :
           std::vector<std::pair<int64_t, int64_t>>{{3, 2}, {7, 3}, {300, 211}}) {
        std::vector<float> x = gaussian(static_cast<size_t>(n * cols), ++seed);
        std::copy(token.begin(), token.end(), x.begin() + pos * cols);
        std::vector<float> y;
        ASSERT_EQ(run_matmul(w, x, n, s, &y), "");
        for (int64_t r = 0; r < rows; ++r) {
          const float got = y[pos * rows + r];
          if (bits(got) != bits(alone[r])) {
            ADD_FAILURE() << describe(t, rows, cols, n) << (tensor_cores ? " (tensor cores)" : "")
                          << ": token at position " << pos << ", row " << r << ": " << got << " (0x"
                          << std::hex << bits(got) << ") in the batch, " << alone[r] << " (0x"
                          << bits(alone[r]) << std::dec << ") alone";
            break;
          }
        }
      }
    }
  }
}

// The int8 mma.sync path (calls of 32 tokens or more with the switch on) against the host
// arithmetic, bit for bit: 150 rows (a partial 64-row tile), 32 and 100 tokens (partial
// 64-token tiles), the 32-element formats with a short last segment.
TEST(CudaMatmul, TensorCorePathGivesTheHostBits) {
  REQUIRE_GPU();
  const TensorCoresScope scope(true);
  Stream s;
  ASSERT_EQ(s.create(), "");
  uint32_t seed = 7000;
  for (TensorType t : gpu_types()) {
    if (is_float(t)) continue;
    const bool k_quant = block_geometry(t).block_size == 256;
    const int64_t rows = 150, cols = k_quant ? 2304 : 2080;
    for (int64_t n : {32, 100}) {
      const HostMatrix h = make_matrix(t, rows, cols, ++seed, true);
      const std::vector<float> x = gaussian(static_cast<size_t>(n * cols), ++seed);
      const std::string what = describe(t, rows, cols, n).append(" (tensor cores)");
      DeviceMatrix w;
      ASSERT_EQ(upload_matrix(id(t), h.rows, h.cols, h.bytes.data(), h.row_bytes, s, &w), "")
          << what;
      std::vector<float> y;
      ASSERT_EQ(run_matmul(w, x, n, s, &y), "") << what;
      expect_matches_reference(y, h, x, n, true, what);
      expect_same_bits(y, on_host(h, x, n), h.rows, what);
    }
  }
}

// HEARTH_GPU_BENCH=1: decode (1 token) GB/s of weights streamed and prefill (512 tokens)
// TFLOP/s per type. The matrix is copied enough times that the copies exceed the L2
// cache, and the timed loop walks them in turn.
float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

TEST(CudaMatmul, Bench) {
  if (std::getenv("HEARTH_GPU_BENCH") == nullptr) GTEST_SKIP() << "set HEARTH_GPU_BENCH=1";
  REQUIRE_GPU();
  Stream s;
  ASSERT_EQ(s.create(), "");
  DeviceProps props;
  ASSERT_EQ(device_props(0, &props), "");
  std::printf("bench device: %s, %d SMs, L2 %zu MiB\n", props.name.c_str(), props.sm_count,
              props.l2_bytes >> 20);
  struct Case {
    int64_t rows, cols, n;
  };
  const std::vector<Case> cases = {{4096, 4096, 1}, {14336, 4096, 1}, {4096, 4096, 512}};
  for (TensorType t : gpu_types()) {
    for (const Case& c : cases) {
      for (bool tensor_cores : {false, true}) {
        if (tensor_cores && (c.n == 1 || is_float(t))) continue;
        const TensorCoresScope scope(tensor_cores);
        const HostMatrix h = make_matrix(t, c.rows, c.cols, 77, false);
        const size_t wbytes = h.bytes.size();
        const size_t copies =
            c.n > 1 ? 1
                    : std::min<size_t>(32, std::max<size_t>(1, (4 * props.l2_bytes) / wbytes + 1));
        std::vector<DeviceMatrix> ws(copies);
        for (auto& w : ws) {
          ASSERT_EQ(upload_matrix(id(t), h.rows, h.cols, h.bytes.data(), h.row_bytes, s, &w), "");
        }
        const std::vector<float> x = gaussian(static_cast<size_t>(c.n * c.cols), 3);
        DeviceBuffer dx, dy, scratch;
        const size_t sb = matmul_scratch_bytes(c.n, c.cols, c.rows);
        ASSERT_EQ(dx.allocate(x.size() * sizeof(float)), "");
        ASSERT_EQ(dy.allocate(static_cast<size_t>(c.n * c.rows) * sizeof(float)), "");
        ASSERT_EQ(scratch.allocate(sb), "");
        ASSERT_EQ(copy_to_device(dx.data(), x.data(), x.size() * sizeof(float), s), "");
        auto pass = [&]() {
          for (const auto& w : ws) {
            const Error e = matmul(w, dx.as<float>(), c.n, dy.as<float>(), scratch.data(), sb, s);
            if (!e.empty()) return e;
          }
          return Error();
        };
        ASSERT_EQ(pass(), "");  // warm-up
        std::vector<float> ms;
        const int reps = c.n > 1 ? 10 : 20;
        for (int i = 0; i < reps; ++i) {
          Timer timer;
          ASSERT_EQ(timer.start(s), "");
          ASSERT_EQ(pass(), "");
          float m = 0;
          ASSERT_EQ(timer.stop(s, &m), "");
          ms.push_back(m / static_cast<float>(copies));
        }
        const double sec = median(ms) * 1e-3;
        if (c.n == 1) {
          std::printf("bench %-5s decode  %5lldx%lld n=1:   %8.2f us  %7.1f GB/s of weights\n",
                      quant_type_name(t), static_cast<long long>(c.rows),
                      static_cast<long long>(c.cols), sec * 1e6, wbytes / sec * 1e-9);
        } else {
          std::printf("bench %-5s prefill %5lldx%lld n=%lld: %8.2f us  %7.2f TFLOP/s%s\n",
                      quant_type_name(t), static_cast<long long>(c.rows),
                      static_cast<long long>(c.cols), static_cast<long long>(c.n), sec * 1e6,
                      2.0 * c.rows * c.cols * c.n / sec * 1e-12,
                      tensor_cores ? " (tensor cores)" : "");
        }
        std::fflush(stdout);
      }
    }
  }
}

}  // namespace
}  // namespace hearth::engine::cuda

#else

TEST(CudaMatmul, Skipped) {
  GTEST_SKIP() << "built without CUDA";
}

#endif
