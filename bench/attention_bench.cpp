// Decode attention micro-benchmark: one token attending at context N on every
// layer and KV head of a TinyLlama-1.1B-shaped KV store (22 layers, 4 KV heads of
// 64, 8 query heads per KV head), one thread, the engine's widest lanes that the
// kernel table allows. "cold" evicts the caches between iterations (a 64 MiB read,
// not timed), as the weights streamed by a decode step do; "warm" does not.
// Reports the KV bytes read per second.
//
//   build/bench/hearth_microbench --benchmark_filter=Attention
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/attention.h"
#include "engine/model/kv_store.h"
#include "engine/thread_pool.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine {
namespace {

constexpr int32_t kLayers = 22, kKvHeads = 4, kHeadDim = 64, kGroup = 8, kCtx = 4096;

// A TinyLlama-shaped store (kLayers layers, kv_dim values a position) with positions
// 0 .. filled - 1 of sequence 0 holding random F16 K and V; nullopt (the benchmark
// marked failed) when it cannot be made.
std::optional<KvStore> random_kv(benchmark::State& state, int32_t kv_dim, int32_t n_ctx,
                                 int32_t filled) {
  auto created = KvStore::create(1, kLayers, n_ctx, kv_dim, KvType::kF16, {}, kHeadDim);
  if (!created.ok()) {
    state.SkipWithError(created.status().to_string().c_str());
    return std::nullopt;
  }
  KvStore kv = std::move(*created);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<uint16_t> k(static_cast<size_t>(kv_dim)), v(k.size());
  for (int32_t l = 0; l < kLayers; ++l) {
    for (int32_t p = 0; p < filled; ++p) {
      for (size_t i = 0; i < k.size(); ++i) {
        k[i] = fp32_to_fp16(dist(rng));
        v[i] = fp32_to_fp16(dist(rng));
      }
      kv.put_k(0, l, p, k.data());
      kv.put_v(0, l, p, v.data());
    }
  }
  kv.set_len(0, filled);
  return kv;
}

void BM_DecodeAttention(benchmark::State& state, bool cold) {
  const auto n_past = static_cast<int32_t>(state.range(0));
  const int32_t kv_heads = state.range(1) > 0 ? static_cast<int32_t>(state.range(1)) : kKvHeads;
  const int32_t kv_dim = kv_heads * kHeadDim;
  std::optional<KvStore> store = random_kv(state, kv_dim, std::max(kCtx, n_past + 1), n_past + 1);
  if (!store) return;
  const KvStore& kv = *store;
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> q(static_cast<size_t>(kGroup * kHeadDim)), out(q.size());
  for (auto& x : q) x = fp16_to_fp32(fp32_to_fp16(dist(rng)));
  std::vector<float> scratch(
      attend_tokens_scratch_floats(1, kGroup, std::max(kCtx, n_past + 1), kHeadDim));
  const TokenQueries token{n_past, q.data(), out.data()};
  std::vector<uint64_t> evict(cold ? (size_t{64} << 20) / 8 : 0, 1);
  uint64_t sink = 0;
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      for (uint64_t x : evict) sink += x;
      state.ResumeTiming();
    }
    for (int32_t l = 0; l < kLayers; ++l) {
      for (int32_t h = 0; h < kv_heads; ++h) {
        attend_tokens(kv, 0, l, h, kGroup, {&token, 1}, kHeadDim, 0.125f, scratch.data());
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  benchmark::DoNotOptimize(sink);
  const double kv_bytes = 2.0 * kLayers * (n_past + 1) * kv_dim * sizeof(uint16_t);
  state.counters["GB/s_kv"] = benchmark::Counter(
      kv_bytes, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// The engine's decode path at long context (forward.cpp's attention_split): one token on
// every layer, the score pass over all KV heads split by positions across `threads`
// threads, then softmax and P.V per KV head across them; caches evicted between
// iterations (not timed), as a decode step's weights do. Reports the KV bytes read per
// second.
void BM_DecodeSplit(benchmark::State& state) {
  const auto n_past = static_cast<int32_t>(state.range(0));
  const auto threads = static_cast<int32_t>(state.range(1));
  const int32_t kv_dim = kKvHeads * kHeadDim;
  const int32_t n_ctx = std::max(kCtx, n_past + 1);
  std::optional<KvStore> store = random_kv(state, kv_dim, n_ctx, n_past + 1);
  if (!store) return;
  const KvStore& kv = *store;
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const size_t per_head = static_cast<size_t>(kGroup) * kHeadDim;
  std::vector<float> q(per_head * kKvHeads), out(q.size());
  for (auto& x : q) x = fp16_to_fp32(fp32_to_fp16(dist(rng)));
  TokenQueries per[kKvHeads];
  for (int32_t h = 0; h < kKvHeads; ++h)
    per[h] = {n_past, q.data() + h * per_head, out.data() + h * per_head};
  std::vector<float> shared(kKvHeads * attend_tokens_scratch_floats(1, kGroup, n_ctx, kHeadDim));
  const size_t slot = attend_split_scratch_floats(kKvHeads, kGroup, kHeadDim);
  std::vector<float> slots(slot * static_cast<size_t>(threads));
  ThreadPool tp(threads);
  std::vector<uint64_t> evict((size_t{64} << 20) / 8, 1);
  uint64_t sink = 0;
  const int64_t tiles = attend_split_tiles(n_past);
  for (auto _ : state) {
    state.PauseTiming();
    for (uint64_t x : evict) sink += x;
    state.ResumeTiming();
    for (int32_t l = 0; l < kLayers; ++l) {
      AttendTask tasks[kKvHeads];
      if (!attend_split_tasks(kv, 0, l, kKvHeads, kGroup, per, kHeadDim, 0.125f, shared.data(),
                              tasks)) {
        state.SkipWithError("the active kernel table does not split decode attention");
        return;
      }
      tp.parallel_for(threads, [&](int64_t begin, int64_t end) {
        for (int64_t part = begin; part < end; ++part) {
          const auto [p0, p1] = attend_split_part(tiles, threads, part);
          attend_split_scores(tasks, kKvHeads, p0, p1, slots.data() + part * slot);
        }
      });
      tp.parallel_for(kKvHeads, [&](int64_t begin, int64_t end) {
        for (int64_t h = begin; h < end; ++h) attend_split_finish(tasks[h]);
      });
    }
    benchmark::DoNotOptimize(out.data());
  }
  benchmark::DoNotOptimize(sink);
  const double kv_bytes = 2.0 * kLayers * (n_past + 1) * kv_dim * sizeof(uint16_t);
  state.counters["GB/s_kv"] = benchmark::Counter(
      kv_bytes, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// A prefix hit's tail: `tokens` new tokens after n_past cached positions, in blocks of 8
// as the engine makes them (each block shares K tiles), on every layer and KV head, one
// thread, warm. Reports the useful f32 FMAs per second (QK and P.V).
void BM_TailAttention(benchmark::State& state) {
  const auto n_past = static_cast<int32_t>(state.range(0));
  const auto n_tok = static_cast<int32_t>(state.range(1));
  constexpr int32_t kBlock = 8;
  const int32_t kv_dim = kKvHeads * kHeadDim;
  std::optional<KvStore> store = random_kv(state, kv_dim, kCtx, n_past + n_tok);
  if (!store) return;
  const KvStore& kv = *store;
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const size_t per_token = static_cast<size_t>(kKvHeads) * kGroup * kHeadDim;
  std::vector<float> q(per_token * static_cast<size_t>(n_tok)), out(q.size());
  for (auto& x : q) x = fp16_to_fp32(fp32_to_fp16(dist(rng)));
  std::vector<float> scratch(attend_tokens_scratch_floats(kBlock, kGroup, kCtx, kHeadDim));
  for (auto _ : state) {
    for (int32_t l = 0; l < kLayers; ++l) {
      for (int32_t b0 = 0; b0 < n_tok; b0 += kBlock) {
        for (int32_t h = 0; h < kKvHeads; ++h) {
          TokenQueries tq[kBlock];
          const int32_t nb = std::min(kBlock, n_tok - b0);
          for (int32_t i = 0; i < nb; ++i) {
            const size_t first = static_cast<size_t>(b0 + i) * per_token +
                                 static_cast<size_t>(h) * kGroup * kHeadDim;
            tq[i] = {n_past + b0 + i, q.data() + first, out.data() + first};
          }
          attend_tokens(kv, 0, l, h, kGroup, {tq, static_cast<size_t>(nb)}, kHeadDim, 0.125f,
                        scratch.data());
        }
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  double fmas = 0;
  for (int32_t i = 0; i < n_tok; ++i) fmas += 2.0 * (n_past + i + 1) * kHeadDim;
  fmas *= static_cast<double>(kLayers) * kKvHeads * kGroup;
  state.counters["GFMA/s"] = benchmark::Counter(fmas, benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}

// One attention row's softmax (attention.h's softmax_f16, the active table's): n raw
// scores scaled, exponentiated, summed and normalized to F16 values, in place. Each
// iteration starts from the same scores (a copy, timed too: ~2 % of it).
void BM_Softmax(benchmark::State& state) {
  const auto n = static_cast<int32_t>(state.range(0));
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 8.0f);
  std::vector<float> scores(static_cast<size_t>(n)), row(scores.size());
  for (float& s : scores) s = dist(rng);
  for (auto _ : state) {
    std::copy(scores.begin(), scores.end(), row.begin());
    softmax_f16(row.data(), n, 0.125f);
    benchmark::DoNotOptimize(row.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void Register() {
  benchmark::RegisterBenchmark("Attention/softmax", BM_Softmax)->Arg(2048)->Arg(16384);
  benchmark::RegisterBenchmark("Attention/tail", BM_TailAttention)
      ->Args({2048, 16})
      ->Args({512, 16})
      ->Args({2048, 64})
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("Attention/decode_split/cold", BM_DecodeSplit)
      ->Args({4096, 2})
      ->Args({16384, 2})
      ->Args({32768, 2})
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  for (bool cold : {false, true}) {
    const std::string name = std::string("Attention/decode/") + (cold ? "cold" : "warm");
    benchmark::RegisterBenchmark(name.c_str(), BM_DecodeAttention, cold)
        ->Args({512, 0})
        ->Args({2048, 0})
        ->Args({16384, 0})
        ->Args({16384, 1})  // one KV head: each K and V row read whole (no stride)
        ->Unit(benchmark::kMicrosecond);
  }
}

const int registered = (Register(), 0);

}  // namespace
}  // namespace hearth::engine
