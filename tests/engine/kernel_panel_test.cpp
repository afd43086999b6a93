// Every prefill panel of every runnable kernel table (not only the active one:
// a table's panels may be shadowed by a wider table's on this CPU) against the
// scalar dot, bit for bit: ragged row counts, block counts that are not a multiple
// of the four phases, token counts across the kernels' token groups and blocks,
// and no write outside the rows a panel owns.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/cpu_features.h"
#include "engine/kernels/kernel_set.h"
#include "engine/matmul.h"
#include "engine/quant/quant.h"
#include "quant_test_util.h"

namespace hearth::engine {
namespace {

using gguf::TensorType;
using testing::bits;
using testing::gaussian;
using testing::random_blocks;

std::vector<int64_t> lengths_for(TensorType t) {
  const int64_t block = block_geometry(t).block_size;
  if (block == 1) return {40, 3079};       // float rows: tails past the last 32
  if (block == 32) return {32, 96, 2080};  // 1, 3 and 65 blocks: partial phases
  return {256, 768, 2304};                 // super-blocks
}

// Rows of a block handed to a GEMM that reads them in place: several panels and a
// ragged last one.
constexpr int kInPlaceRows = 3 * kPanelRows + 5;

class PanelTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(PanelTest, EveryTablesPanelMatchesScalarDot) {
  const TensorType t = GetParam();
  const int id = static_cast<int>(t);
  const VecDotFn want_dot = scalar_kernels().dot[id];
  int checked = 0;
  for (const KernelSet* k : runnable_kernel_sets()) {
    const PanelKernels& pk = k->panel[id];
    if (pk.gemm == nullptr) continue;
    for (int64_t n : lengths_for(t)) {
      for (int n_rows : {kPanelRows, 11, 1, kInPlaceRows}) {
        // A GEMM on rows in place takes whole blocks (any count), a packing one panels.
        if (n_rows > kPanelRows && pk.pack != nullptr) continue;
        const auto w = random_blocks(t, n * n_rows, static_cast<uint32_t>(n + n_rows));
        const size_t w_stride = quant_row_bytes(t, n);
        for (int nt : {1, 2, 3, 8, 33, 70}) {
          const auto xf = gaussian(static_cast<size_t>(nt * n), static_cast<uint32_t>(nt), 4.0f);
          const size_t x_stride = activation_row_bytes(t, n);
          std::vector<uint8_t> xq(x_stride * nt);
          for (int i = 0; i < nt; ++i)
            quantize_activation_row(t, xf.data() + i * n, n, xq.data() + i * x_stride);

          // Output rows are y_stride apart; lanes past n_rows hold a sentinel.
          const size_t y_stride = kInPlaceRows + 5;
          const float sentinel = -1234.5f;
          std::vector<float> y(y_stride * nt, sentinel);
          std::vector<uint8_t> panel;
          const uint8_t* rows = w.data();
          if (pk.pack != nullptr) {
            panel.assign(pk.bytes(n), 0xA5);
            pk.pack(w.data(), w_stride, n_rows, n, panel.data());
            rows = panel.data();
          }
          pk.gemm(rows, n_rows, n, xq.data(), x_stride, nt, y.data(), y_stride);

          for (int i = 0; i < nt; ++i) {
            for (size_t r = 0; r < y_stride; ++r) {
              const float got = y[i * y_stride + r];
              if (r >= static_cast<size_t>(n_rows)) {
                ASSERT_EQ(bits(got), bits(sentinel)) << k->isa << " wrote row " << r;
                continue;
              }
              const float want = want_dot(w.data() + r * w_stride, xq.data() + i * x_stride, n);
              ASSERT_EQ(bits(got), bits(want))
                  << k->isa << " " << quant_type_name(t) << " n=" << n << " rows=" << n_rows
                  << " nt=" << nt << " token " << i << " row " << r << ": " << got << " vs "
                  << want;
            }
          }
          ++checked;
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no runnable table has a panel for " << quant_type_name(t);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, PanelTest, ::testing::ValuesIn(testing::weight_types()),
                         [](const auto& info) { return std::string(quant_type_name(info.param)); });

}  // namespace
}  // namespace hearth::engine
