// Kernel micro-benchmarks: matmul per weight type at TinyLlama-1.1B shapes (rows x
// cols: attention 2048 x 2048, FFN up 5632 x 2048 and down 2048 x 5632, the 32000 x 2048
// output head, larger than the caches: a decode from memory),
// mat-vec (decode, 1 token) and mat-mat (prefill, 64 tokens; 512 on the square
// shape, one thread), 1 and 2 threads. Q4_0 also as the weight arena stores it
// (interleaved row groups, engine/row_group_layout.h) where the table has a kernel
// for that, with a 4-token batch (several sequences decoding) as well.
// Reports GFLOP/s (2 * rows * cols * tokens per matmul).
//
//   build/bench/hearth_microbench --benchmark_filter=Matmul
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/cpu_features.h"
#include "engine/matmul.h"
#include "engine/quant/quant.h"
#include "engine/row_group_layout.h"

namespace hearth::engine {
namespace {

using gguf::TensorType;

// A rows x cols matrix of type t: 64 distinct quantized random rows, repeated
// (values do not affect speed; every row still has its own memory).
std::vector<uint8_t> make_matrix(TensorType t, int64_t rows, int64_t cols) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const size_t row_bytes = quant_row_bytes(t, cols);
  std::vector<uint8_t> m(row_bytes * static_cast<size_t>(rows));
  std::vector<float> x(static_cast<size_t>(cols));
  for (int64_t r = 0; r < std::min<int64_t>(rows, 64); ++r) {
    for (auto& v : x) v = dist(rng);
    (void)quantize_row(t, x.data(), m.data() + r * row_bytes, cols);
  }
  for (int64_t r = 64; r < rows; ++r)
    std::memcpy(m.data() + r * row_bytes, m.data() + (r % 64) * row_bytes, row_bytes);
  return m;
}

// The same matrix with its whole row groups interleaved.
std::vector<uint8_t> interleave(TensorType t, int64_t rows, int64_t cols,
                                const std::vector<uint8_t>& plain) {
  std::vector<uint8_t> out = plain;
  const size_t row_bytes = quant_row_bytes(t, cols);
  const size_t group_bytes = row_bytes * kInterleavedRows;
  for (int64_t g = 0; g < rows / kInterleavedRows; ++g)
    interleave_row_group(t, plain.data() + g * group_bytes, row_bytes, cols,
                         out.data() + g * group_bytes);
  return out;
}

void BM_Matmul(benchmark::State& state, TensorType t, int64_t rows, int64_t cols,
               bool interleaved) {
  const int64_t n_tokens = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  auto m = make_matrix(t, rows, cols);
  if (interleaved) m = interleave(t, rows, cols, m);
  const WeightView w{t, rows, cols, m.data(), interleaved};
  std::vector<float> x(static_cast<size_t>(n_tokens * cols));
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (auto& v : x) v = dist(rng);
  std::vector<float> y(static_cast<size_t>(n_tokens * rows));
  ThreadPool pool(threads);
  MatmulScratch scratch;
  for (auto _ : state) {
    matmul(w, x.data(), n_tokens, y.data(), pool, scratch);
    benchmark::DoNotOptimize(y.data());
  }
  const double flops = 2.0 * static_cast<double>(rows * cols * n_tokens);
  state.counters["GFLOP/s"] = benchmark::Counter(
      flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.counters["GB/s_weights"] = benchmark::Counter(static_cast<double>(m.size()),
                                                      benchmark::Counter::kIsIterationInvariantRate,
                                                      benchmark::Counter::kIs1000);
  state.SetLabel(std::string(kernel_isa()) + " " + quant_type_name(t) +
                 (interleaved ? " interleaved" : ""));
}

// One activation row of n floats quantized for a weight type's dot (Q8_0 for Q4_0 and
// Q8_0, Q8_K for the K-quants) by the active table, as every matmul does first.
void BM_QuantizeActivations(benchmark::State& state, TensorType weight) {
  const int64_t n = state.range(0);
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = dist(rng);
  std::vector<uint8_t> out(activation_row_bytes(weight, n));
  const KernelSet& k = active_kernels();
  const auto quantize = weight == TensorType::kQ4_0 ? k.quantize_q8_0 : k.quantize_q8_k;
  if (quantize == nullptr) {
    state.SkipWithError("the active table has no vectorized quantizer for this type");
    return;
  }
  for (auto _ : state) {
    quantize(x.data(), n, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetLabel(kernel_isa());
}

void Register() {
  benchmark::RegisterBenchmark("Quantize/q8_0", BM_QuantizeActivations, TensorType::kQ4_0)
      ->Arg(2048)
      ->Arg(5632);
  benchmark::RegisterBenchmark("Quantize/q8_k", BM_QuantizeActivations, TensorType::kQ4_K)
      ->Arg(2048)
      ->Arg(5632);
  const TensorType types[] = {TensorType::kQ4_0, TensorType::kQ8_0, TensorType::kQ4_K,
                              TensorType::kQ6_K, TensorType::kF16,  TensorType::kQ5_K,
                              TensorType::kQ4_1, TensorType::kQ5_0, TensorType::kF32};
  const int64_t shapes[][2] = {{2048, 2048}, {5632, 2048}, {2048, 5632}, {32000, 2048}};
  for (TensorType t : types) {
    for (const auto& s : shapes) {
      const std::string name = std::string("Matmul/") + quant_type_name(t) + "/" +
                               std::to_string(s[0]) + "x" + std::to_string(s[1]);
      // One thread: rates from CPU time (robust on a loaded machine). Two
      // threads: wall time (CPU time would only count the calling thread).
      // A 512-token prefill chunk (the engine's batch) on the square shape only:
      // the pack of a prefill GEMM is amortized over that many tokens there.
      // 4-16 tokens (interleaved form): several sequences decoding at once, a prefix
      // hit's tail; 8-16 plain: where the pack path takes over from the tile path
      // (PanelKernels::min_tokens).
      const std::vector<int64_t> tokens = s[0] == s[1] ? std::vector<int64_t>{1, 4, 64, 512}
                                                       : std::vector<int64_t>{1, 4, 8, 12, 16, 64};
      benchmark::RegisterBenchmark(name.c_str(), BM_Matmul, t, s[0], s[1], false)
          ->ArgsProduct({tokens, {1}})
          ->ArgNames({"tokens", "threads"})
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(name.c_str(), BM_Matmul, t, s[0], s[1], false)
          ->ArgsProduct({{1, 64}, {2}})
          ->ArgNames({"tokens", "threads"})
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
      if (has_interleaved_layout(t) &&
          active_kernels().group_dot_interleaved[static_cast<int>(t)] != nullptr) {
        const std::string iname = std::string("Matmul/") + quant_type_name(t) + "-interleaved/" +
                                  std::to_string(s[0]) + "x" + std::to_string(s[1]);
        benchmark::RegisterBenchmark(iname.c_str(), BM_Matmul, t, s[0], s[1], true)
            ->ArgsProduct({{1, 4, 8, 16, 64}, {1}})
            ->ArgNames({"tokens", "threads"})
            ->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark(iname.c_str(), BM_Matmul, t, s[0], s[1], true)
            ->ArgsProduct({{1}, {2}})
            ->ArgNames({"tokens", "threads"})
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
    }
  }
}

const int registered = (Register(), 0);

}  // namespace
}  // namespace hearth::engine
