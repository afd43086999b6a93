// Every decode row-group kernel (and small-batch group GEMM) of every runnable kernel
// table against the scalar dot, bit for bit: block counts that are not a multiple of the four
// phases, a row stride wider than a row, the extreme integer sums the kernels' int16 bound is
// stated for, and no write past the group's kRowGroup outputs.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "engine/cpu_features.h"
#include "engine/kernels/kernel_set.h"
#include "engine/matmul.h"
#include "engine/quant/blocks.h"
#include "engine/quant/quant.h"
#include "engine/row_group_layout.h"
#include "quant_test_util.h"

namespace hearth::engine {
namespace {

using gguf::TensorType;
using testing::bits;
using testing::gaussian;
using testing::random_blocks;

// n_rows rows of n elements, row_stride bytes apart (the gap filled with junk
// that a kernel must not read as weights).
std::vector<uint8_t> strided_rows(TensorType t, int64_t n, size_t row_stride, bool extreme,
                                  uint32_t seed, int n_rows = kRowGroup) {
  const size_t row_bytes = quant_row_bytes(t, n);
  std::vector<uint8_t> out(row_stride * n_rows, 0x5A);
  for (int r = 0; r < n_rows; ++r) {
    auto row = random_blocks(t, n, seed + static_cast<uint32_t>(r));
    if (extreme) {
      // Every quant at its largest stored value; the fp16 scales stay as drawn
      // (Q4_K: its 6-bit sub-block scales and mins go to 63 as well).
      // Q6_K: every 6-bit quant 63 and every sub-block scale -128 (its fp16 d last).
      const BlockGeometry g = block_geometry(t);
      const size_t scale_bytes = t == TensorType::kQ4_0 ? 2 : t == TensorType::kQ4_K ? 4 : 0;
      for (size_t b = 0; b < row_bytes; b += g.block_bytes) {
        if (t == TensorType::kQ6_K) {
          auto* blk = reinterpret_cast<BlockQ6_K*>(row.data() + b);
          std::memset(blk->ql, 0xFF, sizeof(blk->ql) + sizeof(blk->qh));
          std::memset(blk->scales, 0x80, sizeof(blk->scales));
          continue;
        }
        std::memset(row.data() + b + scale_bytes, 0xFF, g.block_bytes - scale_bytes);
      }
    }
    std::memcpy(out.data() + r * row_stride, row.data(), row_bytes);
  }
  return out;
}

// A converted activation row of n elements; extreme: every value quantizes to
// +-127, one sign per block (per super-block for the k-quants: the largest sums).
std::vector<uint8_t> activation_row(TensorType t, int64_t n, bool extreme, uint32_t seed) {
  auto xf = gaussian(static_cast<size_t>(n), seed, 3.0f);
  if (extreme) {
    const int64_t run = block_geometry(t).block_size;
    for (int64_t i = 0; i < n; ++i) xf[i] = (i / run) % 2 == 0 ? 5.0f : -5.0f;
  }
  std::vector<uint8_t> xq(activation_row_bytes(t, n));
  quantize_activation_row(t, xf.data(), n, xq.data());
  return xq;
}

// out[r] for r < n_rows against the scalar dot of plain row r (row_stride apart);
// out's entries past n_rows must still hold the sentinel.
void expect_scalar_bits(const KernelSet& k, TensorType t, const uint8_t* rows, size_t row_stride,
                        int n_rows, const std::vector<uint8_t>& xq, int64_t n,
                        const std::vector<float>& out, float sentinel, const std::string& what) {
  const VecDotFn want_dot = scalar_kernels().dot[static_cast<int>(t)];
  for (int r = 0; r < n_rows; ++r) {
    const float want = want_dot(rows + r * row_stride, xq.data(), n);
    ASSERT_EQ(bits(out[r]), bits(want)) << k.isa << " " << quant_type_name(t) << " n=" << n << what
                                        << " row " << r << ": " << out[r] << " vs " << want;
  }
  for (size_t i = static_cast<size_t>(n_rows); i < out.size(); ++i)
    ASSERT_EQ(bits(out[i]), bits(sentinel)) << k.isa << " wrote past the group";
}

// One test over every weight type (only some have row groups: a test per type would
// mostly skip).
TEST(RowGroupTest, EveryTablesRowGroupsMatchScalarDot) {
  int checked = 0;
  for (const TensorType t : testing::weight_types()) {
    const int id = static_cast<int>(t);
    for (const KernelSet* k : runnable_kernel_sets()) {
      const GroupDotFn group = k->group_dot[id];
      if (group == nullptr) continue;
      for (int64_t n : {32, 96, 224, 2080}) {  // 1, 3, 7 and 65 blocks
        const size_t row_bytes = quant_row_bytes(t, n);
        for (size_t row_stride : {row_bytes, row_bytes + 36}) {
          for (bool extreme : {false, true}) {
            const auto w = strided_rows(t, n, row_stride, extreme, static_cast<uint32_t>(n));
            const auto xq = activation_row(t, n, extreme, static_cast<uint32_t>(n + 1));
            const float sentinel = -1234.5f;
            std::vector<float> out(kRowGroup + 3, sentinel);
            group(w.data(), row_stride, xq.data(), n, out.data());
            expect_scalar_bits(
                *k, t, w.data(), row_stride, kRowGroup, xq, n, out, sentinel,
                " stride=" + std::to_string(row_stride) + (extreme ? " extreme" : ""));
            if (HasFatalFailure()) return;
            ++checked;
          }
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no runnable kernel table has decode row groups";
}

// The interleaved-group kernels (the weight arena's layout) likewise, on the same
// random and extreme blocks.
TEST(RowGroupTest, EveryTablesInterleavedRowGroupsMatchScalarDot) {
  int checked = 0;
  for (const TensorType t : testing::weight_types()) {
    const int id = static_cast<int>(t);
    for (const KernelSet* k : runnable_kernel_sets()) {
      const GroupDotFn group = k->group_dot_interleaved[id];
      if (group == nullptr) continue;
      ASSERT_TRUE(has_interleaved_layout(t)) << k->isa << " " << quant_type_name(t);
      for (int64_t blocks : {1, 3, 7, 65}) {
        const int64_t n = blocks * block_geometry(t).block_size;
        const size_t row_bytes = quant_row_bytes(t, n);
        for (bool extreme : {false, true}) {
          const auto w = strided_rows(t, n, row_bytes, extreme, static_cast<uint32_t>(n + 5),
                                      kInterleavedRows);
          std::vector<uint8_t> grouped(w.size());
          interleave_row_group(t, w.data(), row_bytes, n, grouped.data());
          const auto xq = activation_row(t, n, extreme, static_cast<uint32_t>(n + 6));
          const float sentinel = -1234.5f;
          std::vector<float> out(kInterleavedRows + 3, sentinel);
          group(grouped.data(), row_bytes, xq.data(), n, out.data());
          expect_scalar_bits(*k, t, w.data(), row_bytes, kInterleavedRows, xq, n, out, sentinel,
                             extreme ? " interleaved, extreme" : " interleaved");
          if (HasFatalFailure()) return;
          ++checked;
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no runnable kernel table has interleaved row groups";
}

// The group GEMMs (runs of interleaved groups x nt tokens) likewise: runs of 1, 2 and 3
// groups (a kernel may take them in pairs, with one left over), every token count
// through the tile sizes and their remainders, outputs y_stride apart with the gaps and
// the space after the last token left untouched.
TEST(RowGroupTest, EveryTablesGroupGemmsMatchScalarDotForEveryTokenCount) {
  int checked = 0;
  for (const TensorType t : testing::weight_types()) {
    const int id = static_cast<int>(t);
    for (const KernelSet* k : runnable_kernel_sets()) {
      const GroupGemmFn gemm = k->group_gemm_interleaved[id];
      if (gemm == nullptr) continue;
      ASSERT_TRUE(has_interleaved_layout(t)) << k->isa << " " << quant_type_name(t);
      for (int64_t blocks : {1, 3, 7, 65}) {
        const int64_t n = blocks * block_geometry(t).block_size;
        const size_t row_bytes = quant_row_bytes(t, n);
        const size_t group_bytes = kInterleavedRows * row_bytes;
        for (int n_groups : {1, 2, 3}) {
          const bool extreme = n_groups == 2 ? blocks % 2 == 1 : blocks % 2 == 0;
          const int n_rows = n_groups * kInterleavedRows;
          const auto w = strided_rows(t, n, row_bytes, extreme,
                                      static_cast<uint32_t>(n + 7 + n_groups), n_rows);
          std::vector<uint8_t> grouped(w.size());
          for (int g = 0; g < n_groups; ++g) {
            interleave_row_group(t, w.data() + g * group_bytes, row_bytes, n,
                                 grouped.data() + g * group_bytes);
          }
          const int max_nt = 17;
          const size_t x_stride = activation_row_bytes(t, n) + 64;  // rows with a gap
          std::vector<uint8_t> xs(x_stride * max_nt, 0xA5);
          std::vector<std::vector<uint8_t>> rows;
          for (int i = 0; i < max_nt; ++i) {
            rows.push_back(
                activation_row(t, n, extreme && i % 2 == 0, static_cast<uint32_t>(n * 31 + i)));
            std::memcpy(xs.data() + i * x_stride, rows.back().data(), rows.back().size());
          }
          for (int nt : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17}) {
            const size_t y_stride = n_rows + 5;
            const float sentinel = -1234.5f;
            std::vector<float> y(y_stride * (nt + 1), sentinel);
            gemm(grouped.data(), group_bytes, n_groups, n, xs.data(), x_stride, nt, y.data(),
                 y_stride);
            for (int i = 0; i < nt; ++i) {
              const std::vector<float> out(y.begin() + i * y_stride,
                                           y.begin() + (i + 1) * y_stride);
              expect_scalar_bits(*k, t, w.data(), row_bytes, n_rows, rows[i], n, out, sentinel,
                                 " group gemm groups=" + std::to_string(n_groups) +
                                     " nt=" + std::to_string(nt) + " token " + std::to_string(i) +
                                     (extreme ? " extreme" : ""));
              if (HasFatalFailure()) return;
            }
            for (size_t j = nt * y_stride; j < y.size(); ++j)
              ASSERT_EQ(bits(y[j]), bits(sentinel)) << k->isa << " wrote past the last token";
            ++checked;
          }
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no runnable kernel table has a group GEMM";
}

}  // namespace
}  // namespace hearth::engine
