// `hearth bench rows -m MODEL [--sizes 1,2,4,...] [--depths 0,2048] [--json]`: the cost of
// one forward pass of n tokens of one sequence after d positions already in its KV cache:
// the small-batch prefill of a prefix hit's tail (n = 8-64 after a restore) and a
// speculative verify row (n = draft + 1). For each depth the prefix is prefilled once;
// each timed pass appends n tokens, then the sequence is truncated back to d.
//   runs[]  {depth, tokens, ms (median wall time over --reps), cpu_ms (median process CPU
//            time: on a loaded machine with --threads 1 it tracks the work better than
//            the wall clock), ms_per_token, vs_one (ms / the 1-token pass's ms at that
//            depth, when 1 is among the sizes), cpu_vs_one (the same for cpu_ms)}
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/bench_util.h"
#include "cli/device_flags.h"
#include "cli/registry.h"
#include "common/json_text.h"
#include "engine/cpu_features.h"
#include "hearth/engine/engine.h"

namespace hearth::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct RowsArgs {
  std::string model;
  int threads = 2;
  bool json = false;
  std::vector<int32_t> sizes = {1, 2, 4, 8, 9, 16, 32, 64};
  std::vector<int32_t> depths = {0, 2048};
  int reps = 5;
  DeviceFlags device;  // EngineOptions::device, n_gpu_layers
};

std::vector<BatchToken> row_of(int32_t n, int32_t first_pos, uint32_t seed, int32_t n_vocab) {
  std::vector<BatchToken> batch;
  const std::vector<int32_t> toks = bench_tokens(n, n_vocab, seed);
  for (int32_t i = 0; i < n; ++i) batch.push_back({toks[i], first_pos + i, 0, i + 1 == n});
  return batch;
}

struct RowTime {
  double ms = 0;      // wall
  double cpu_ms = 0;  // process CPU time
};

// Medians of a pass of n tokens after `depth` positions (already in seq 0).
Result<RowTime> time_row(Engine& e, int32_t depth, int32_t n, int reps) {
  std::vector<double> ms, cpu;
  std::vector<float> logits;
  for (int rep = 0; rep < reps; ++rep) {
    const auto batch = row_of(n, depth, 777u + static_cast<uint32_t>(rep), e.info().n_vocab);
    const double c0 = process_cpu_ms();
    const auto t0 = Clock::now();
    HEARTH_RETURN_IF_ERROR(e.forward(batch, logits));
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    cpu.push_back(process_cpu_ms() - c0);
    HEARTH_RETURN_IF_ERROR(e.seq_truncate(0, depth));
  }
  return RowTime{median(ms), median(cpu)};
}

Result<nlohmann::json> run_rows(const RowsArgs& a) {
  const int32_t most = *std::max_element(a.sizes.begin(), a.sizes.end());
  const int32_t deepest = *std::max_element(a.depths.begin(), a.depths.end());
  EngineOptions o;
  o.n_threads = a.threads;
  o.n_seq_max = 1;
  o.n_ctx = deepest + most;
  o.n_batch = std::max(512, most);
  HEARTH_RETURN_IF_ERROR(apply_device_flags(a.device, o));
  HEARTH_ASSIGN_OR_RETURN(auto engine, Engine::load(a.model, o));
  Engine& e = *engine;
  nlohmann::json runs = nlohmann::json::array();
  std::vector<int32_t> depths = a.depths;
  std::sort(depths.begin(), depths.end());
  int32_t filled = 0;
  std::vector<float> logits;
  for (int32_t depth : depths) {
    if (depth > filled) {  // extend the prefix; earlier depths' passes were truncated away
      HEARTH_RETURN_IF_ERROR(
          e.forward(row_of(depth - filled, filled, 1u, e.info().n_vocab), logits));
      filled = depth;
    }
    RowTime one;
    for (int32_t n : a.sizes) {
      HEARTH_ASSIGN_OR_RETURN(const RowTime t, time_row(e, depth, n, a.reps));
      if (n == 1) one = t;
      nlohmann::json r = {{"depth", depth},
                          {"tokens", n},
                          {"ms", t.ms},
                          {"cpu_ms", t.cpu_ms},
                          {"ms_per_token", t.ms / n}};
      if (one.ms > 0) r["vs_one"] = t.ms / one.ms;
      if (one.cpu_ms > 0) r["cpu_vs_one"] = t.cpu_ms / one.cpu_ms;
      runs.push_back(std::move(r));
    }
  }
  return nlohmann::json{{"model", e.info().name},         {"quant", e.info().quant_name},
                        {"device", e.info().device},      {"n_gpu_layers", e.info().n_gpu_layers},
                        {"threads", a.threads},           {"kernels", engine::kernel_isa()},
                        {"numerics_id", e.numerics_id()}, {"runs", std::move(runs)}};
}

Registrar reg("bench_rows", [](CLI::App& root) {
  CLI::App* bench = bench_command(root);
  auto a = std::make_shared<RowsArgs>();
  auto* cmd = bench->add_subcommand(
      "rows", "Cost of one n-token pass after d cached positions (prefix-hit tails, verify rows)");
  cmd->add_option("-m,--model", a->model, "GGUF model file")->required();
  cmd->add_option("-t,--threads", a->threads, "threads")->check(CLI::Range(1, 256));
  add_device_flags(cmd, &a->device);
  cmd->add_flag("--json", a->json, "JSON output");
  cmd->add_option("--sizes", a->sizes, "tokens per pass")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--depths", a->depths, "cached positions before each pass")
      ->delimiter(',')
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--reps", a->reps, "passes per (depth, size); the median is reported")
      ->check(CLI::Range(1, 99));
  cmd->callback([a] {
    auto r = run_rows(*a);
    if (!r.ok()) {
      std::fprintf(stderr, "hearth bench rows: %s\n", r.status().to_string().c_str());
      exit_code() = 1;
      return;
    }
    if (a->json) {
      std::printf("%s\n", json_text(*r, 2).c_str());
      return;
    }
    std::printf(
        "model %s (%s), device %s (%d GPU layers), %d threads, kernels %s\n%8s %8s %10s "
        "%10s %12s %8s\n",
        (*r)["model"].get<std::string>().c_str(), (*r)["quant"].get<std::string>().c_str(),
        (*r)["device"].get<std::string>().c_str(), (*r)["n_gpu_layers"].get<int>(), a->threads,
        (*r)["kernels"].get<std::string>().c_str(), "depth", "tokens", "ms", "cpu ms", "ms/token",
        "vs 1");
    for (const auto& run : (*r)["runs"]) {
      std::printf("%8d %8d %10.2f %10.2f %12.3f %8s\n", run["depth"].get<int>(),
                  run["tokens"].get<int>(), run["ms"].get<double>(), run["cpu_ms"].get<double>(),
                  run["ms_per_token"].get<double>(),
                  run.contains("vs_one")
                      ? (std::to_string(run["vs_one"].get<double>()).substr(0, 5) + "x").c_str()
                      : "-");
    }
  });
});

}  // namespace
}  // namespace hearth::cli
