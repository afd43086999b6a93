// `hearth bench engine -m MODEL [--threads N] [--json]`: prefill and decode speed of
// the engine, with the memory bandwidth of this machine measured in the same run so
// that decode speed can be read against its roofline (decode reads every weight once
// per token).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli/bench_bandwidth.h"
#include "cli/bench_util.h"
#include "cli/device_flags.h"
#include "cli/progress.h"
#include "cli/registry.h"
#include "common/json_text.h"
#include "engine/cpu_features.h"
#include "hearth/engine/context.h"
#include "hearth/engine/engine.h"
#include "hearth/engine/sampler.h"

namespace hearth::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Prefill of n tokens into seq 0 (logits for the last one); seconds.
Result<double> time_prefill(Engine& e, const std::vector<int32_t>& toks, int32_t n) {
  HEARTH_RETURN_IF_ERROR(e.seq_clear(0));
  std::vector<BatchToken> batch;
  for (int32_t i = 0; i < n; ++i) batch.push_back({toks[i], i, 0, i + 1 == n});
  std::vector<float> logits;
  const auto t0 = Clock::now();
  HEARTH_RETURN_IF_ERROR(e.forward(batch, logits));
  return seconds_since(t0);
}

// n_gen greedy decode steps after the n_prompt tokens already in seq 0 (the steps of
// an earlier call are dropped first); seconds for the n_gen.
Result<double> time_decode(Engine& e, const std::vector<int32_t>& toks, int32_t n_prompt,
                           int32_t n_gen) {
  HEARTH_RETURN_IF_ERROR(e.seq_truncate(0, n_prompt));
  std::vector<float> logits;
  std::vector<BatchToken> one(1);
  int32_t next = toks[static_cast<size_t>(n_prompt) % toks.size()];
  const auto t0 = Clock::now();
  for (int32_t i = 0; i < n_gen; ++i) {
    one[0] = {next, n_prompt + i, 0, true};
    HEARTH_RETURN_IF_ERROR(e.forward(one, logits));
    next = Sampler::greedy(logits);
  }
  return seconds_since(t0);
}

// The decode prompt of n_prompt positions made from a real prefill of its first n_fill
// tokens, whose KV rows are then repeated (position p holds position p % n_fill's K and
// V) up to n_prompt: decode over it does the same work as over a prefilled prompt (the
// attention's operations do not depend on the values), without the minutes a 16k-32k
// prefill takes on a few cores. Each layer keeps every position (no ring), else an error.
Status fill_kv(Engine& e, const std::vector<int32_t>& toks, int32_t n_prompt, int32_t n_fill) {
  HEARTH_RETURN_IF_ERROR(time_prefill(e, toks, n_fill).status());
  const size_t per_pos = e.kv_bytes_per_position();
  if (e.kv_pack_bytes(n_prompt) != per_pos * static_cast<size_t>(n_prompt)) {
    return InvalidArgument("--kv-fill: the model has sliding-window layers (use --swa-full)");
  }
  std::vector<uint8_t> part;
  HEARTH_RETURN_IF_ERROR(e.kv_pack(0, n_fill, part));
  // kv_pack's layout: per layer, its K rows then its V rows, one row per position.
  const size_t n_runs = 2 * static_cast<size_t>(e.info().n_layer);
  const size_t row = per_pos / n_runs;
  std::vector<uint8_t> full(per_pos * static_cast<size_t>(n_prompt));
  for (size_t r = 0; r < n_runs; ++r) {
    const uint8_t* src = part.data() + r * row * static_cast<size_t>(n_fill);
    uint8_t* dst = full.data() + r * row * static_cast<size_t>(n_prompt);
    for (int32_t p = 0; p < n_prompt; p += n_fill) {
      const size_t n = static_cast<size_t>(std::min(n_fill, n_prompt - p));
      std::memcpy(dst + static_cast<size_t>(p) * row, src, n * row);
    }
  }
  return e.kv_unpack(0, full, n_prompt);
}

struct BenchArgs {
  std::string model;
  int threads = 2;
  bool json = false;
  std::vector<int32_t> prompts = {128, 512, 2048};  // ppN sizes
  int32_t gen = 64;                                 // tgN steps
  int32_t gen_after = 512;                          // prompt before the tgN steps
  int reps = 3;                                     // median of
  bool weights_in_place = false;                    // EngineOptions::weights_in_place
  std::string kv_type = "f16";                      // EngineOptions::kv_type, by name
  bool quiet = false;                               // no load progress bar
  int32_t kv_fill = 0;        // > 0: the decode prompt's KV repeated from this many (fill_kv)
  int32_t ctx = 0;            // EngineOptions::n_ctx; 0: 4096, or what the sizes asked need
  bool swa_full = false;      // EngineOptions::swa_full
  DeviceFlags device;         // EngineOptions::device, n_gpu_layers
  std::vector<int32_t> rows;  // saved row sizes to report (no timing)
};

int run_bench(const BenchArgs& a) {
  const int threads = a.threads;
  const bool json = a.json;
  EngineOptions o;
  o.n_threads = threads;
  o.n_seq_max = 1;
  // Positions the runs need: the longest prefill, or the decode prompt and its steps.
  int32_t longest = a.gen > 0 ? a.gen_after + a.gen : 0;  // --gen 0: no decode prompt
  for (int32_t n : a.prompts) longest = std::max(longest, n);
  o.n_ctx = a.ctx > 0 ? a.ctx : std::max(4096, longest);
  o.swa_full = a.swa_full;
  o.weights_in_place = a.weights_in_place;
  o.kv_type = *kv_type_from_name(a.kv_type);
  if (Status s = apply_device_flags(a.device, o); !s.ok()) {
    std::fprintf(stderr, "hearth bench engine: %s\n", s.to_string().c_str());
    return 1;
  }
  ProgressBar bar("loading " + a.model, ProgressBar::Unit::kBytes, a.quiet);
  o.on_load_progress = bar.callback();
  const auto load_start = Clock::now();
  auto loaded = Engine::load(a.model, o);
  const double load_s = seconds_since(load_start);
  bar.finish();
  if (!loaded.ok()) {
    std::fprintf(stderr, "hearth bench engine: %s\n", loaded.status().to_string().c_str());
    return 1;
  }
  Engine& e = **loaded;
  const ModelInfo& info = e.info();
  // Every size asked must fit the context: none is clamped or skipped silently.
  if (longest > info.n_ctx) {
    const std::string what =
        a.gen > 0 && a.gen_after + a.gen == longest
            ? "--gen-after " + std::to_string(a.gen_after) + " + --gen " + std::to_string(a.gen)
            : "--prompts " + std::to_string(longest);
    std::fprintf(stderr,
                 "hearth bench engine: %s needs %d positions, more than the context of %d "
                 "(--ctx; the model's own is %d)\n",
                 what.c_str(), longest, info.n_ctx, info.n_ctx_train);
    return 1;
  }
  const auto toks = bench_tokens(longest, info.n_vocab);
  nlohmann::json out;
  out["model"] = info.name;
  out["quant"] = info.quant_name;
  out["threads"] = threads;
  out["device"] = info.device;  // "cpu" or the GPU ("cuda:0 NVIDIA H200, sm_90")
  out["n_gpu_layers"] = info.n_gpu_layers;
  out["weight_bytes"] = info.weight_bytes;
  out["weights_placement"] = info.weights_placement;
  out["load_s"] = load_s;  // the file opened, checked and its matrices placed
  out["numerics_id"] = e.numerics_id();
  out["kernels"] = engine::kernel_isa();
  out["kv_type"] = kv_type_name(info.kv_type);
  out["n_ctx"] = info.n_ctx;
  out["kv_bytes"] = info.kv_bytes;  // committed at load: 2 sequences (1 + embed's)
  // Saved rows (kv_pack) of --rows sizes: sliding-window layers save their window only.
  for (int32_t n : a.rows)
    if (n <= info.n_ctx) out["row_bytes_" + std::to_string(n)] = e.kv_pack_bytes(n);
  for (int32_t n : a.prompts) {
    std::vector<double> rates;
    for (int rep = 0; rep < a.reps; ++rep) {
      auto s = time_prefill(e, toks, n);
      if (!s.ok()) {
        std::fprintf(stderr, "hearth bench engine: %s\n", s.status().to_string().c_str());
        return 1;
      }
      rates.push_back(n / *s);
    }
    out["pp" + std::to_string(n)] = median(rates);
  }
  const int32_t n_prompt = a.gen_after;
  // The decode prompt is prefilled once (untimed); each rep drops the last one's steps.
  if (a.gen > 0) {
    const Status s = a.kv_fill > 0 && a.kv_fill < n_prompt
                         ? fill_kv(e, toks, n_prompt, a.kv_fill)
                         : time_prefill(e, toks, n_prompt).status();
    if (!s.ok()) {
      std::fprintf(stderr, "hearth bench engine: %s\n", s.to_string().c_str());
      return 1;
    }
  }
  // Decode reads every weight matrix once per token; the embedding table only one row
  // (unless it doubles as the output projection).
  uint64_t bytes_per_token = info.weight_bytes;
  if (!info.tied_embeddings) bytes_per_token -= info.token_embd_bytes;
  // Each decode rep is paired with a bandwidth measurement taken just before it, and
  // the fraction of the roofline is the median of the per-rep fractions: on a shared
  // machine the bandwidth moves by tens of percent between minutes, so a decode rate
  // and a bandwidth measured far apart would not describe the same machine.
  std::vector<double> rates, memcpys, reads, fractions;
  for (int rep = 0; rep < std::max(1, a.reps); ++rep) {
    const Bandwidth bw = measure_bandwidth(threads);
    memcpys.push_back(bw.memcpy_gbps);
    reads.push_back(bw.read_gbps);
    if (a.gen <= 0) continue;
    auto s = time_decode(e, toks, n_prompt, a.gen);
    if (!s.ok()) {
      std::fprintf(stderr, "hearth bench engine: %s\n", s.status().to_string().c_str());
      return 1;
    }
    rates.push_back(a.gen / *s);
    fractions.push_back(rates.back() / (bw.read_gbps * 1e9 / static_cast<double>(bytes_per_token)));
  }
  const double tg = rates.empty() ? 0.0 : median(rates);
  const std::string tg_key = "tg" + std::to_string(a.gen);
  out[tg_key] = tg;
  out[tg_key + "_prompt_tokens"] = n_prompt;
  if (a.kv_fill > 0 && a.kv_fill < n_prompt) out[tg_key + "_kv_fill"] = a.kv_fill;
  const Bandwidth bw{median(memcpys), median(reads)};
  out["memcpy_gbps"] = bw.memcpy_gbps;
  out["read_gbps"] = bw.read_gbps;
  out["weight_bytes_per_token"] = bytes_per_token;
  const double roofline = bw.read_gbps * 1e9 / static_cast<double>(bytes_per_token);
  out["roofline_tg"] = roofline;
  out["roofline_fraction"] = fractions.empty() ? 0.0 : median(fractions);
  if (json) {
    std::printf("%s\n", json_text(out, 2).c_str());
    return 0;
  }
  std::printf(
      "model %s (%s), device %s (%d GPU layers), %d threads, kernels %s, KV %s, weights: %s "
      "(loaded in %.2f s), numerics %s\n",
      info.name.c_str(), info.quant_name.c_str(), info.device.c_str(), info.n_gpu_layers, threads,
      engine::kernel_isa(), kv_type_name(info.kv_type), info.weights_placement.c_str(), load_s,
      e.numerics_id().c_str());
  std::printf("%-18s %10d positions, KV %s for 2 sequences\n", "context", info.n_ctx,
              format_bytes(info.kv_bytes).c_str());
  for (int32_t n : a.rows) {
    const std::string k = "row_bytes_" + std::to_string(n);
    if (out.contains(k)) {
      std::printf("%-18s %10s saved row of %d positions\n", "row",
                  format_bytes(out[k].get<uint64_t>()).c_str(), n);
    }
  }
  for (int32_t n : a.prompts) {
    const std::string k = "pp" + std::to_string(n);
    if (out.contains(k)) std::printf("%-18s %10.1f tok/s\n", k.c_str(), out[k].get<double>());
  }
  std::printf("%-18s %10.1f tok/s (after a %d-token prompt%s)\n", tg_key.c_str(), tg, n_prompt,
              out.contains(tg_key + "_kv_fill") ? ", its KV repeated from a shorter prefill" : "");
  std::printf("%-18s %10.2f GB/s\n%-18s %10.2f GB/s\n", "memcpy", bw.memcpy_gbps, "read",
              bw.read_gbps);
  std::printf(
      "%-18s %10.1f tok/s (%.1f%% reached: median over reps of decode / the\n"
      "%-18s bandwidth measured just before it)\n",
      "roofline tg", roofline, 100.0 * out["roofline_fraction"].get<double>(), "");
  return 0;
}

Registrar reg("bench_engine", [](CLI::App& root) {
  CLI::App* bench = bench_command(root);
  auto a = std::make_shared<BenchArgs>();
  auto* cmd = bench->add_subcommand("engine", "Prefill/decode speed against the memory roofline");
  cmd->add_option("-m,--model", a->model, "GGUF model file")->required();
  cmd->add_option("-t,--threads", a->threads, "threads")->check(CLI::Range(1, 256));
  cmd->add_flag("--json", a->json, "JSON output");
  cmd->add_option("--kv-type", a->kv_type,
                  "element type of the KV cache: f16 (default), q8_0 or q4_0")
      ->check(CLI::IsMember({"f16", "q8_0", "q4_0"}));
  add_device_flags(cmd, &a->device);
  cmd->add_flag("--weights-in-place", a->weights_in_place,
                "read the weight matrices from the file mapping instead of a huge-page copy");
  cmd->add_option("--prompts", a->prompts, "prefill sizes to time (ppN)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--gen", a->gen, "decode steps to time (tgN; 0 skips decode)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--gen-after", a->gen_after,
                  "prompt tokens before the decode steps (up to the context less --gen)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--kv-fill", a->kv_fill,
                  "prefill only this many of the --gen-after prompt and repeat their KV rows "
                  "up to it (decode at 16k-32k without a minutes-long prefill)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--reps", a->reps, "repetitions; the median is reported")
      ->check(CLI::Range(1, 99));
  cmd->add_flag("-q,--quiet", a->quiet,
                "No load progress bar (there is none when stderr is not a terminal)");
  cmd->add_option("--ctx", a->ctx,
                  "positions per sequence (EngineOptions::n_ctx; default 4096, or more when "
                  "--gen-after + --gen or --prompts need it)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_flag("--swa-full", a->swa_full,
                "sliding-window layers keep every position instead of a ring of the window");
  cmd->add_option("--rows", a->rows, "saved row sizes (positions) to report, not timed")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 24));
  cmd->callback([a] { exit_code() = run_bench(*a); });
});

}  // namespace
}  // namespace hearth::cli
