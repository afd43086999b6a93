// The core's arithmetic peak, for the "fraction of peak" figures in docs/benchmarks.md:
// how many 512-bit int8 dot products (vpdpbusd, 64 multiply-adds each) or FP32 FMAs (16
// each) one thread issues per second with twelve independent chains, and with the two
// mixed (they share the same ports on current Intel cores). Reports items/s (one item =
// one instruction) and the equivalent GOP/s (2 ops per multiply-add). Skipped where the
// CPU has no AVX-512 VNNI.
//
//   build/bench/hearth_microbench --benchmark_filter=Peak
#include <benchmark/benchmark.h>

#include "engine/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace hearth::engine {
namespace {

constexpr int kChains = 12;          // more than latency x issue width (4 cycles x 2)
constexpr int64_t kLoops = 1 << 16;  // per benchmark iteration

enum class Mix { kInt8, kFp32, kBoth };

// Each step's result is handed to an empty asm, so the compiler keeps every instruction
// (and the chains in registers: an in-out operand sent them through the stack, 0.4x).
template <Mix mix>
__attribute__((target("avx512f,avx512vnni"), noinline)) int64_t issue() {
  __m512i acc[kChains];
  __m512 facc[kChains];
  for (int i = 0; i < kChains; ++i) {
    acc[i] = _mm512_set1_epi32(i);
    facc[i] = _mm512_set1_ps(static_cast<float>(i));
  }
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(5);
  const __m512 x = _mm512_set1_ps(1.0001f), y = _mm512_set1_ps(1e-7f);
  for (int64_t n = 0; n < kLoops; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) {
      if (mix == Mix::kInt8 || (mix == Mix::kBoth && i % 2 == 1)) {
        acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
        asm volatile("" ::"v"(acc[i]));
      } else {
        facc[i] = _mm512_fmadd_ps(facc[i], x, y);
        asm volatile("" ::"v"(facc[i]));
      }
    }
  }
  // Lane 0 of each chain, through memory (the extract and reduce intrinsics trip GCC
  // 12's -Wuninitialized false positive inside its own header).
  int64_t sink = 0;
  for (int i = 0; i < kChains; ++i) {
    alignas(64) int32_t lanes[16];
    alignas(64) float flanes[16];
    _mm512_store_si512(lanes, acc[i]);
    _mm512_store_ps(flanes, facc[i]);
    sink += lanes[0] + static_cast<int64_t>(flanes[0]);
  }
  return sink;
}

template <Mix mix>
void BM_Peak(benchmark::State& state, double ops_per_instruction) {
  const CpuFeatures& f = cpu_features();
  if (!f.avx512f || !f.avx512vnni) {
    state.SkipWithError("no AVX-512 VNNI on this CPU");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(issue<mix>());
  const double instructions = static_cast<double>(kLoops) * kChains;
  state.counters["instr"] = benchmark::Counter(
      instructions, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.counters["GOP"] = benchmark::Counter(instructions * ops_per_instruction * 1e-9,
                                             benchmark::Counter::kIsIterationInvariantRate,
                                             benchmark::Counter::kIs1000);
}

void Register() {
  benchmark::RegisterBenchmark("Peak/vpdpbusd_zmm", BM_Peak<Mix::kInt8>, 128.0);
  benchmark::RegisterBenchmark("Peak/fma_zmm", BM_Peak<Mix::kFp32>, 32.0);
  // Half of each: equal to either alone where they share the ports.
  benchmark::RegisterBenchmark("Peak/vpdpbusd_and_fma_zmm", BM_Peak<Mix::kBoth>, 80.0);
}

const int registered = (Register(), 0);

}  // namespace
}  // namespace hearth::engine

#endif  // x86-64
