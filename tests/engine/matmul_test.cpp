// matmul: correctness against a plain loop over the kernels, and the invariance
// contract (same bits for any batch size, batch position and thread count).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "engine/kernels/kernel_set.h"
#include "engine/matmul.h"
#include "quant_test_util.h"

namespace hearth::engine {
namespace {

using gguf::TensorType;
using testing::bits;
using testing::gaussian;
using testing::random_blocks;

struct Matrix {
  std::vector<uint8_t> bytes;
  WeightView view;
};

Matrix make_weights(TensorType t, int64_t rows, int64_t cols, uint32_t seed) {
  Matrix m;
  m.bytes = random_blocks(t, rows * cols, seed);
  m.view = WeightView{t, rows, cols, m.bytes.data()};
  return m;
}

class MatmulTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(MatmulTest, MatchesPerOutputDot) {
  const TensorType t = GetParam();
  const int64_t rows = 37, cols = 512, n_tokens = 5;
  const Matrix w = make_weights(t, rows, cols, 1);
  const auto x = gaussian(n_tokens * cols, 2);
  std::vector<float> y(n_tokens * rows);
  ThreadPool pool(2);
  MatmulScratch scratch;
  matmul(w.view, x.data(), n_tokens, y.data(), pool, scratch);
  std::vector<uint8_t> xq(activation_row_bytes(t, cols));
  const VecDotFn dot = scalar_kernels().dot[static_cast<int>(t)];
  for (int64_t tok = 0; tok < n_tokens; ++tok) {
    const float* xr = x.data() + tok * cols;
    const void* act = xr;
    if (activation_type(t) != TensorType::kF32) {
      quantize_activation_row(t, xr, cols, xq.data());
      act = xq.data();
    }
    for (int64_t r = 0; r < rows; ++r) {
      ASSERT_EQ(bits(y[tok * rows + r]), bits(dot(w.view.row(r), act, cols)))
          << quant_type_name(t) << " token " << tok << " row " << r;
    }
  }
}

// The invariance contract: token t of a batch of any size, at any position, on
// any thread count, through the tile path or the single-dot path, gives the bits
// of a lone mat-vec.
TEST_P(MatmulTest, BitsIndependentOfBatchPositionThreadsAndPath) {
  const TensorType t = GetParam();
  const int64_t rows = 70, cols = 512;
  const Matrix w = make_weights(t, rows, cols, 3);
  const int64_t max_tokens = 300;
  const auto x = gaussian(max_tokens * cols, 4, 2.0f);

  // Reference: each token alone, one thread, single-dot path.
  ThreadPool one(1);
  MatmulScratch scratch;
  std::vector<float> ref(max_tokens * rows);
  for (int64_t tok = 0; tok < max_tokens; ++tok) {
    matmul_with(active_kernels(), false, w.view, x.data() + tok * cols, 1, ref.data() + tok * rows,
                one, scratch);
  }

  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n_tokens : {1, 7, 12, 16, 17, 64, 300}) {
      // Batches that start at different positions of the token stream.
      for (int64_t start : {int64_t{0}, max_tokens - n_tokens, (max_tokens - n_tokens) / 2}) {
        std::vector<float> y(n_tokens * rows);
        matmul(w.view, x.data() + start * cols, n_tokens, y.data(), pool, scratch);
        for (int64_t i = 0; i < n_tokens * rows; ++i) {
          ASSERT_EQ(bits(y[i]), bits(ref[start * rows + i]))
              << quant_type_name(t) << " threads=" << threads << " n_tokens=" << n_tokens
              << " start=" << start << " index=" << i;
        }
      }
    }
  }
}

// Matrices sharing one input, as Q/K/V and gate/up do: matmul_many gives each part
// exactly matmul's bits, in one dispatch (few tokens) or part by part (prefill, or a
// part of another width), with any thread count.
TEST_P(MatmulTest, MatmulManyGivesEachPartsMatmulBits) {
  const TensorType t = GetParam();
  const int64_t cols = 512;
  const Matrix a = make_weights(t, 70, cols, 7), b = make_weights(t, 16, cols, 8),
               c = make_weights(t, 37, cols, 9), wide = make_weights(t, 20, 2 * cols, 10);
  const auto x = gaussian(12 * 2 * cols, 11);
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    MatmulScratch scratch;
    for (int64_t n_tokens : {1, 3, 12}) {
      for (bool unlike : {false, true}) {
        std::vector<const Matrix*> ms = {&a, &b, unlike ? &wide : &c};
        std::vector<std::vector<float>> got(ms.size());
        std::vector<MatmulPart> parts;
        for (size_t i = 0; i < ms.size(); ++i) {
          got[i].assign(static_cast<size_t>(n_tokens * ms[i]->view.rows), -1.0f);
          parts.push_back({&ms[i]->view, got[i].data()});
        }
        matmul_many(parts, x.data(), n_tokens, pool, scratch);
        for (size_t i = 0; i < ms.size(); ++i) {
          std::vector<float> want(got[i].size());
          matmul(ms[i]->view, x.data(), n_tokens, want.data(), pool, scratch);
          ASSERT_EQ(std::memcmp(got[i].data(), want.data(), want.size() * sizeof(float)), 0)
              << quant_type_name(t) << " threads=" << threads << " n_tokens=" << n_tokens
              << (unlike ? " (a part of another width)" : "") << " part " << i;
        }
      }
    }
  }
}

TEST_P(MatmulTest, ScalarTableGivesSameBitsAsActive) {
  const TensorType t = GetParam();
  const int64_t rows = 24, cols = 768, n_tokens = 9;
  const Matrix w = make_weights(t, rows, cols, 5);
  const auto x = gaussian(n_tokens * cols, 6);
  ThreadPool pool(2);
  MatmulScratch scratch;
  std::vector<float> a(n_tokens * rows), b(n_tokens * rows);
  matmul_with(scalar_kernels(), true, w.view, x.data(), n_tokens, a.data(), pool, scratch);
  matmul(w.view, x.data(), n_tokens, b.data(), pool, scratch);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(bits(a[i]), bits(b[i])) << i;
}

// The F16 prefill GEMM parks accumulators between K chunks and splits rows into
// sub-blocks and tokens into groups: long rows with a tail past the last full 32,
// ragged row and token counts, every result still a lone mat-vec's bits.
TEST(MatmulTest, F16LongRowsWithTailMatchSingleDot) {
  const TensorType t = TensorType::kF16;
  for (int64_t cols : {int64_t{2048 + 1024 + 32 + 7}, int64_t{40}, int64_t{5}}) {
    const int64_t rows = 45, n_tokens = 23;
    const Matrix w = make_weights(t, rows, cols, 11);
    const auto x = gaussian(n_tokens * cols, 12, 3.0f);
    ThreadPool pool(2);
    MatmulScratch scratch;
    std::vector<float> y(n_tokens * rows), ref(rows);
    matmul(w.view, x.data(), n_tokens, y.data(), pool, scratch);
    for (int64_t tok = 0; tok < n_tokens; ++tok) {
      matmul_with(scalar_kernels(), false, w.view, x.data() + tok * cols, 1, ref.data(), pool,
                  scratch);
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(bits(y[tok * rows + r]), bits(ref[r]))
            << "cols " << cols << " token " << tok << " row " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulTest, ::testing::ValuesIn(testing::weight_types()),
                         [](const auto& info) { return std::string(quant_type_name(info.param)); });

TEST(MatmulTest, GetRowsDequantizesTheChosenRows) {
  const Matrix w = make_weights(TensorType::kQ4_K, 10, 256, 8);
  const int32_t ids[3] = {7, 0, 7};
  std::vector<float> out(3 * 256), row(256);
  get_rows(w.view, ids, 3, out.data());
  for (int i = 0; i < 3; ++i) {
    dequantize_row(TensorType::kQ4_K, w.view.row(ids[i]), row.data(), 256);
    EXPECT_EQ(0, std::memcmp(row.data(), out.data() + i * 256, 256 * sizeof(float)));
  }
}

TEST(ThreadPoolTest, CoversRangeWithContiguousChunks) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {1, 2, 3, 10, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      for (int rep = 0; rep < 20; ++rep) {
        pool.parallel_for(n, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
        });
      }
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 20) << threads << " " << n;
    }
  }
}

TEST(ThreadPoolTest, ManyDispatchesWithPausesBetween) {
  // Alternates back-to-back dispatches (workers still spinning) with pauses long
  // enough for the workers to block, to exercise both wake-up paths.
  ThreadPool pool(3);
  std::atomic<int64_t> total{0};
  int64_t expected = 0;
  for (int rep = 0; rep < 400; ++rep) {
    const int64_t n = 1 + rep % 7;
    pool.parallel_for(n, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
    expected += n;
    if (rep % 100 == 99) std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  EXPECT_EQ(total.load(), expected);
}

TEST(ThreadPoolTest, DestroysCleanlyWhileIdle) {
  for (int i = 0; i < 20; ++i) {
    ThreadPool pool(2);
    int hits = 0;
    pool.parallel_for(1, [&](int64_t, int64_t) { ++hits; });
    EXPECT_EQ(hits, 1);
  }
}

}  // namespace
}  // namespace hearth::engine
