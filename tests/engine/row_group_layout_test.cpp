// Interleaved row groups (engine/row_group_layout.h): the byte layout itself, and
// matmul over an interleaved view giving the plain view's bits on every path.
#include "engine/row_group_layout.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/cpu_features.h"
#include "engine/kernels/kernel_set.h"
#include "engine/matmul.h"
#include "engine/quant/blocks.h"
#include "engine/quant/quant.h"
#include "quant_test_util.h"

namespace hearth::engine {
namespace {

using gguf::TensorType;
using testing::bits;
using testing::gaussian;
using testing::random_blocks;

// A matrix twice: as plain rows, and with its whole row groups interleaved.
struct TwoLayouts {
  std::vector<uint8_t> plain, grouped;
  WeightView plain_view, grouped_view;
};

TwoLayouts make(TensorType t, int64_t rows, int64_t cols, uint32_t seed) {
  TwoLayouts m;
  m.plain = random_blocks(t, rows * cols, seed);
  m.grouped = m.plain;
  const size_t group_bytes = quant_row_bytes(t, cols) * kInterleavedRows;
  for (int64_t g = 0; g < rows / kInterleavedRows; ++g) {
    interleave_row_group(t, m.plain.data() + g * group_bytes, quant_row_bytes(t, cols), cols,
                         m.grouped.data() + g * group_bytes);
  }
  m.plain_view = WeightView{t, rows, cols, m.plain.data()};
  m.grouped_view = WeightView{t, rows, cols, m.grouped.data(), true};
  return m;
}

TEST(RowGroupLayoutTest, Q4_0Q4_KAndQ6_KHaveOne) {
  for (const TensorType t : testing::weight_types()) {
    EXPECT_EQ(has_interleaved_layout(t),
              t == TensorType::kQ4_0 || t == TensorType::kQ4_K || t == TensorType::kQ6_K)
        << quant_type_name(t);
  }
}

// Q6_K: d, the 16 scales, the 32 ql words and the 16 qh words, each unit of the 16
// rows side by side; and back.
TEST(RowGroupLayoutTest, PlacesEveryQ6_KByteWhereTheLayoutSays) {
  const int64_t cols = 512;  // 2 super-blocks
  const TwoLayouts m = make(TensorType::kQ6_K, kInterleavedRows, cols, 4);
  const size_t row_bytes = quant_row_bytes(TensorType::kQ6_K, cols);
  const int R = kInterleavedRows;
  for (int64_t b = 0; b < cols / kQKK; ++b) {
    const uint8_t* gb = m.grouped.data() + b * R * sizeof(BlockQ6_K);
    for (int r = 0; r < R; ++r) {
      const auto* block = reinterpret_cast<const BlockQ6_K*>(m.plain.data() + r * row_bytes +
                                                             b * sizeof(BlockQ6_K));
      EXPECT_EQ(0, std::memcmp(gb + 2 * r, &block->d, 2)) << "d, row " << r;
      for (int j = 0; j < 16; ++j)
        EXPECT_EQ(static_cast<int8_t>(gb[2 * R + R * j + r]), block->scales[j])
            << "scale " << j << " row " << r;
      const uint8_t* ql = gb + 2 * R + 16 * R;
      for (int k = 0; k < 32; ++k) {
        EXPECT_EQ(0, std::memcmp(ql + 4 * R * k + 4 * r, block->ql + 4 * k, 4))
            << "ql word " << k << " row " << r;
      }
      const uint8_t* qh = ql + 32 * 4 * R;
      for (int k = 0; k < 16; ++k) {
        EXPECT_EQ(0, std::memcmp(qh + 4 * R * k + 4 * r, block->qh + 4 * k, 4))
            << "qh word " << k << " row " << r;
      }
    }
  }
  std::vector<uint8_t> back(m.plain.size(), 0);
  deinterleave_row_group(TensorType::kQ6_K, m.grouped.data(), cols, back.data());
  EXPECT_EQ(back, m.plain);
}

// Q4_K: d, dmin, the 12 packed scale bytes and the 32 quant words, each unit of
// the 16 rows side by side; and back.
TEST(RowGroupLayoutTest, PlacesEveryQ4_KByteWhereTheLayoutSays) {
  const int64_t cols = 512;  // 2 super-blocks
  const TwoLayouts m = make(TensorType::kQ4_K, kInterleavedRows, cols, 2);
  const size_t row_bytes = quant_row_bytes(TensorType::kQ4_K, cols);
  const int R = kInterleavedRows;
  for (int64_t b = 0; b < cols / kQKK; ++b) {
    const uint8_t* gb = m.grouped.data() + b * R * sizeof(BlockQ4_K);
    for (int r = 0; r < R; ++r) {
      const uint8_t* block = m.plain.data() + r * row_bytes + b * sizeof(BlockQ4_K);
      EXPECT_EQ(0, std::memcmp(gb + 2 * r, block, 2)) << "d, row " << r;
      EXPECT_EQ(0, std::memcmp(gb + 2 * R + 2 * r, block + 2, 2)) << "dmin, row " << r;
      for (int k = 0; k < 12; ++k)
        EXPECT_EQ(gb[4 * R + R * k + r], block[4 + k]) << "scale byte " << k << " row " << r;
      for (int k = 0; k < 32; ++k) {
        EXPECT_EQ(0, std::memcmp(gb + 16 * R + 4 * R * k + 4 * r, block + 16 + 4 * k, 4))
            << "quant word " << k << " row " << r;
      }
    }
  }
  std::vector<uint8_t> back(m.plain.size(), 0);
  deinterleave_row_group(TensorType::kQ4_K, m.grouped.data(), cols, back.data());
  EXPECT_EQ(back, m.plain);
}

// Every byte where the header comment says: per block, the 16 scales in row order,
// then for each 4-byte quant word m the 16 rows' word m in row order.
TEST(RowGroupLayoutTest, PlacesEveryByteWhereTheLayoutSays) {
  const int64_t cols = 96;  // 3 blocks
  const TwoLayouts m = make(TensorType::kQ4_0, kInterleavedRows, cols, 1);
  const size_t row_bytes = quant_row_bytes(TensorType::kQ4_0, cols);
  ASSERT_EQ(m.grouped.size(), kInterleavedRows * row_bytes);
  for (int64_t b = 0; b < cols / kQK32; ++b) {
    const uint8_t* gb = m.grouped.data() + b * kInterleavedRows * sizeof(BlockQ4_0);
    for (int r = 0; r < kInterleavedRows; ++r) {
      const uint8_t* block = m.plain.data() + r * row_bytes + b * sizeof(BlockQ4_0);
      EXPECT_EQ(0, std::memcmp(gb + 2 * r, block, 2)) << "scale, block " << b << " row " << r;
      for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(gb[2 * kInterleavedRows + (j / 4) * 4 * kInterleavedRows + 4 * r + j % 4],
                  block[2 + j])
            << "quant byte " << j << ", block " << b << " row " << r;
      }
    }
  }
  std::vector<uint8_t> back(m.plain.size(), 0);
  deinterleave_row_group(TensorType::kQ4_0, m.grouped.data(), cols, back.data());
  EXPECT_EQ(back, m.plain);
}

// matmul on the interleaved view against the plain view: every runnable table,
// tiles on and off, every token-count path (lone token, multi-token tiles, panels),
// several thread counts, row counts with and without a plain tail.
TEST(RowGroupLayoutTest, MatmulGivesThePlainViewsBitsOnEveryPath) {
  for (const TensorType t : {TensorType::kQ4_0, TensorType::kQ4_K, TensorType::kQ6_K})
    for (const KernelSet* k : runnable_kernel_sets()) {
      for (const int64_t rows : {8, 16, 37, 250}) {
        for (const int64_t blocks : {1, 9}) {
          const int64_t cols = blocks * block_geometry(t).block_size;
          const TwoLayouts m = make(t, rows, cols, static_cast<uint32_t>(rows + cols));
          const int64_t max_tokens = 21;
          const auto x = gaussian(static_cast<size_t>(max_tokens * cols), 3, 2.0f);
          for (const int threads : {1, 3}) {
            ThreadPool pool(threads);
            MatmulScratch scratch;
            for (const bool tiles : {true, false}) {
              for (const int64_t n_tokens : {1, 2, 5, 8, 12, 16, 17, 21}) {
                std::vector<float> want(static_cast<size_t>(n_tokens * rows));
                std::vector<float> got(want.size(), -1.0f);
                matmul_with(*k, tiles, m.plain_view, x.data(), n_tokens, want.data(), pool,
                            scratch);
                matmul_with(*k, tiles, m.grouped_view, x.data(), n_tokens, got.data(), pool,
                            scratch);
                for (size_t i = 0; i < want.size(); ++i) {
                  ASSERT_EQ(bits(got[i]), bits(want[i]))
                      << k->isa << " " << quant_type_name(t) << " rows=" << rows << " cols=" << cols
                      << " threads=" << threads << (tiles ? " tiles" : " dots")
                      << " n_tokens=" << n_tokens << " index " << i;
                }
              }
            }
          }
        }
      }
    }
}

TEST(RowGroupLayoutTest, MatmulManyAndRowReadsSeeThePlainRows) {
  const TensorType t = TensorType::kQ4_0;
  const int64_t cols = 256;
  const TwoLayouts a = make(t, 40, cols, 7), b = make(t, 21, cols, 8);
  ThreadPool pool(2);
  MatmulScratch scratch;
  // 3, 12 and 20 tokens: a decode step of several streams and small prefills, all on
  // the group GEMM (up to 64 tokens) in one dispatch for both parts.
  for (const int64_t n : {3, 12, 20}) {
    const auto x = gaussian(static_cast<size_t>(n * cols), 9);
    std::vector<float> ga(n * 40), gb(n * 21), wa(n * 40), wb(n * 21);
    const MatmulPart parts[] = {{&a.grouped_view, ga.data()}, {&b.grouped_view, gb.data()}};
    matmul_many(parts, x.data(), n, pool, scratch);
    matmul(a.plain_view, x.data(), n, wa.data(), pool, scratch);
    matmul(b.plain_view, x.data(), n, wb.data(), pool, scratch);
    EXPECT_EQ(0, std::memcmp(ga.data(), wa.data(), wa.size() * sizeof(float))) << n << " tokens";
    EXPECT_EQ(0, std::memcmp(gb.data(), wb.data(), wb.size() * sizeof(float))) << n << " tokens";
  }

  // Rows inside a group, and in the plain tail.
  const int32_t ids[] = {0, 13, 7, 39, 33};
  std::vector<float> got(5 * cols), want(5 * cols);
  get_rows(a.grouped_view, ids, 5, got.data());
  get_rows(a.plain_view, ids, 5, want.data());
  EXPECT_EQ(got, want);
  std::vector<float> got_range(30 * cols), want_range(30 * cols);
  dequantize_rows(a.grouped_view, 10, 30, got_range.data());
  dequantize_rows(a.plain_view, 10, 30, want_range.data());
  EXPECT_EQ(got_range, want_range);
}

}  // namespace
}  // namespace hearth::engine
