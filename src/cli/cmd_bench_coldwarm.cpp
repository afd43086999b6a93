// `hearth bench cold-warm -m MODEL [--json]`: time to first token, cold vs warm, through the
// whole runtime (lookup, row read, KV restore, prefill of the rest, first sample).
//   runs[]  for each prompt size and cache tier:
//     cold_ttft_ms   nothing cached: prefill every token
//     warm_ttft_ms   stateless resend: the prompt plus 16 new tokens, no parent_key
//                    (longest-prefix hit, restore, prefill the 16)
//     tail_prefill_ms  of warm_ttft_ms, the part after the restore: the 16-token tail's
//                    forward pass and the first sample (RequestStats prefill_ms - restore_ms)
//     exact_ttft_ms  same prompt with parent_key = the cold run's finish_key (restore only:
//                    the row carries the last position's logits, no forward pass); the
//                    median of --rounds hits; exact_restore_ms the restore inside it
//                    (checkout, read, CRC, KV ready), exact_first_restore_ms the first
//                    one's (a RAM slab's CRC is verified on its first use only)
//     cold_save_pack_ms, warm_save_pack_ms  the worker's pack of the cold and of the warm
//                    run's finish row (every stream waits for it): the process's first
//                    pack takes fresh memory, later ones a recycled payload buffer
//     row_bytes      size of the saved row in its tier; memcpy_ms: one memcpy of that many
//                    bytes (the floor a restore is compared against); restore_vs_memcpy,
//                    restore_gb_s
//     disk only: cold_cache_{ttft,restore,first_restore}_ms the same hits with the row's
//                    pages dropped from the page cache first, dd_ms / dd_gb_s an
//                    O_DIRECT 4 MiB read of the row's file, cold_cache_gb_s and
//                    cold_cache_vs_dd (the fraction of that device read's speed)
//   restore_row  one --restore-tokens row (default 16,384 tokens of this model's KV)
//           saved to each tier and read back at the cache level (bench_restore.h)
//   agents  N agents sharing a 1,000-token system prompt: the first runs alone, the rest
//           concurrently once its cold save is published.
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <thread>

#include "cli/bench_restore.h"
#include "cli/bench_util.h"
#include "cli/device_flags.h"
#include "cli/progress.h"
#include "cli/registry.h"
#include "cli/svg_plot.h"
#include "common/json_text.h"
#include "hearth/runtime/runtime.h"

namespace hearth::cli {
namespace {

using namespace hearth::runtime;
using Clock = std::chrono::steady_clock;

struct BenchArgs {
  std::string model;
  bool json = false;
  std::string plot;  // --plot FILE.svg
  int agents = 4;
  int threads = 0;
  std::vector<int> sizes = {512, 1024, 2048};
  int restore_tokens = 16384;     // the cache-level restore of one row this long (0 = skip)
  int rounds = 3;                 // exact hits per case (medians)
  bool quiet = false;             // no progress bar
  DeviceFlags device;             // ModelConfig::device, n_gpu_layers
  std::function<void()> on_case;  // after each measured (tier, size) case
};

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Wall-clock time from the call to the first generated token.
Result<std::pair<double, RequestStats>> ttft(Runtime& rt, const std::string& id,
                                             std::span<const TokenId> prompt,
                                             const RequestParams& params) {
  auto first = std::make_shared<std::promise<double>>();
  auto done = std::make_shared<std::promise<Result<RequestStats>>>();
  auto got_first = std::make_shared<bool>(false);
  const auto t0 = Clock::now();
  StreamSink sink;
  sink.on_token = [=](TokenId) {
    if (!*got_first) {
      *got_first = true;
      first->set_value(ms_since(t0));
    }
  };
  sink.on_done = [=](const RequestStats& s) { done->set_value(s); };
  sink.on_error = [=](const Status& e) { done->set_value(e); };
  HEARTH_RETURN_IF_ERROR(rt.infer(id, prompt, params, sink).status());
  HEARTH_ASSIGN_OR_RETURN(RequestStats stats, done->get_future().get());
  if (!*got_first) return Internal("no token was generated");
  return std::make_pair(first->get_future().get(), stats);
}

void wait_counter(Runtime& rt, const std::string& name, uint64_t at_least) {
  for (int i = 0; i < 5000 && rt.cache_counters()[name] < at_least; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

Result<std::vector<TokenId>> prompt_tokens(Runtime& rt, const std::string& id, size_t n,
                                           const std::string& seed) {
  std::string text;
  std::vector<TokenId> out;
  for (int round = 0; out.size() < n && round < 64; ++round) {
    text += seed + " once upon a time a small robot counted " + std::to_string(round * 7919) +
            " bright stars while the river sang about the " + std::to_string(round) + " hills. ";
    HEARTH_ASSIGN_OR_RETURN(out, rt.tokenize(id, text));
  }
  if (out.size() < n) return Internal("could not build a long enough prompt");
  out.resize(n);
  return out;
}

Result<ModelConfig> base_config(const BenchArgs& a, Tier tier) {
  ModelConfig c;
  HEARTH_RETURN_IF_ERROR(apply_device_flags(a.device, c));
  c.id = "bench";
  c.model_path = a.model;
  c.n_threads = a.threads;
  // Room for the largest prompt plus the warm run's 16 extra tokens and the reply.
  c.n_ctx = std::max(1100, *std::max_element(a.sizes.begin(), a.sizes.end()) + 64);
  c.n_batch = 512;
  c.n_seq_max = std::max(1, a.agents);
  c.prefill_chunk_size = -1;
  c.tier = tier;
  c.slot_affinity = false;
  c.policy.min_tokens = 256;
  c.policy.cold_min_tokens = 256;
  c.policy.boundary_align_tokens = 256;
  return c;
}

// Exact hits of `prompt` (parent_key set in `p`), `rounds` of them: the median TTFT and
// restore time (RequestStats::restore_ms: checkout, read, CRC, KV ready). The disk tier
// is measured twice: with the row's pages in the page cache (exact_*), and after they
// were dropped (cold_cache_*), which the restore reads with O_DIRECT; the dd-style read
// of the same file is its floor.
Result<nlohmann::json> exact_hits(Runtime& rt, std::span<const TokenId> prompt,
                                  const RequestParams& p, int rounds, const std::string& dir,
                                  Tier tier) {
  nlohmann::json out;
  for (bool cold_cache : {false, true}) {
    if (cold_cache && tier != Tier::kDisk) break;
    std::vector<double> ttfts, restores;
    for (int r = 0; r < std::max(1, rounds); ++r) {
      if (tier == Tier::kDisk) cold_cache ? drop_page_cache(dir) : warm_page_cache(dir);
      HEARTH_ASSIGN_OR_RETURN(auto exact, ttft(rt, "bench", prompt, p));
      if (exact.second.cache_hit_kind != CacheHitKind::kExact)
        std::fprintf(stderr, "bench cold-warm: exact run was %s\n",
                     cache_hit_kind_name(exact.second.cache_hit_kind));
      ttfts.push_back(exact.first);
      restores.push_back(exact.second.restore_ms);
    }
    const std::string prefix = cold_cache ? "cold_cache_" : "exact_";
    out[prefix + "ttft_ms"] = median(ttfts);
    out[prefix + "restore_ms"] = median(restores);
    out[prefix + "first_restore_ms"] = restores.front();
  }
  return out;
}

// restore_vs_memcpy and GB/s of a run's restores; on the disk tier also the dd-style
// O_DIRECT read of the row's file (dd_ms, dd_gb_s) and the cold-cache restore's fraction
// of its speed (cold_cache_vs_dd).
Status add_restore_ratios(nlohmann::json& run, uint64_t row_bytes) {
  const double bytes = static_cast<double>(row_bytes);
  HEARTH_ASSIGN_OR_RETURN(const double copy, memcpy_ms(row_bytes));
  run["memcpy_ms"] = copy;
  const double restore = run["exact_restore_ms"].get<double>();
  run["restore_vs_memcpy"] = restore / copy;
  run["restore_gb_s"] = bytes / restore / 1e6;
  if (!run.contains("cold_cache_restore_ms")) return OkStatus();
  const double cold = run["cold_cache_restore_ms"].get<double>();
  run["cold_cache_gb_s"] = bytes / cold / 1e6;
  if (run.contains("dd_ms")) run["cold_cache_vs_dd"] = run["dd_ms"].get<double>() / cold;
  return OkStatus();
}

Result<nlohmann::json> run_tier(const BenchArgs& a, Tier tier, const std::string& dir) {
  RuntimeOptions o;
  if (tier == Tier::kRamFile) o.cache.ram_file_dir = dir;
  if (tier == Tier::kDisk) o.cache.disk_dir = dir;
  HEARTH_ASSIGN_OR_RETURN(auto rt, Runtime::create(o));
  HEARTH_ASSIGN_OR_RETURN(ModelConfig cfg, base_config(a, tier));
  cfg.policy.cold_min_tokens = 1 << 30;  // only finish rows: one row per prompt
  HEARTH_RETURN_IF_ERROR(rt->load_model(cfg).status());
  HEARTH_ASSIGN_OR_RETURN(LoadedModelInfo info, rt->model_info("bench"));
  const std::string bytes_counter = std::string("bytes_") + tier_name(tier);
  nlohmann::json runs = nlohmann::json::array();
  uint64_t finishes = 0;
  for (int n : a.sizes) {
    if (n + 32 > info.context_size) {
      std::fprintf(stderr, "bench cold-warm: skipping %d tokens (context is %d)\n", n,
                   info.context_size);
      continue;
    }
    HEARTH_ASSIGN_OR_RETURN(auto prompt,
                            prompt_tokens(*rt, "bench", static_cast<size_t>(n),
                                          std::string(tier_name(tier)) + std::to_string(n)));
    RequestParams p;
    p.response_tokens = 1;
    p.sampling.temperature = 0;
    const uint64_t bytes_before = rt->cache_counters()[bytes_counter];
    const uint64_t pack_ns_before = rt->cache_counters()["runtime_save_pack_ns"];
    HEARTH_ASSIGN_OR_RETURN(auto cold, ttft(*rt, "bench", prompt, p));
    wait_counter(*rt, "saves_finish", ++finishes);
    rt->cache_flush();  // the save's job over: its payload buffer is back in the pool
    const uint64_t row_bytes = rt->cache_counters()[bytes_counter] - bytes_before;
    const uint64_t pack_ns_cold = rt->cache_counters()["runtime_save_pack_ns"];
    std::vector<TokenId> longer = prompt;
    HEARTH_ASSIGN_OR_RETURN(auto tail, prompt_tokens(*rt, "bench", 16, "and then"));
    longer.insert(longer.end(), tail.begin(), tail.end());
    HEARTH_ASSIGN_OR_RETURN(auto warm, ttft(*rt, "bench", longer, p));
    if (warm.second.cache_hit_kind != CacheHitKind::kPartial)
      std::fprintf(stderr, "bench cold-warm: warm run was %s, not a prefix hit\n",
                   cache_hit_kind_name(warm.second.cache_hit_kind));
    wait_counter(*rt, "saves_finish", ++finishes);
    rt->cache_flush();
    const uint64_t pack_ns_warm = rt->cache_counters()["runtime_save_pack_ns"];
    RequestParams pe = p;
    pe.parent_key = cold.second.finish_key;
    HEARTH_ASSIGN_OR_RETURN(nlohmann::json exact, exact_hits(*rt, prompt, pe, a.rounds, dir, tier));
    nlohmann::json run = {
        {"tokens", n},
        {"tier", tier_name(tier)},
        {"device", info.device},  // "cpu" or the GPU ("cuda:0 NVIDIA H200, sm_90")
        {"n_gpu_layers", info.n_gpu_layers},
        {"cold_ttft_ms", cold.first},
        {"warm_ttft_ms", warm.first},
        {"tail_prefill_ms", warm.second.prefill_ms - std::max(0.0, warm.second.restore_ms)},
        {"row_bytes", row_bytes},
        {"cold_save_pack_ms", static_cast<double>(pack_ns_cold - pack_ns_before) / 1e6},
        {"warm_save_pack_ms", static_cast<double>(pack_ns_warm - pack_ns_cold) / 1e6},
        {"kv_bytes_per_token", static_cast<double>(row_bytes) / n}};
    run.update(exact);
    if (tier == Tier::kDisk && cold.second.finish_key) {
      const std::string row_file = dir + "/" + *cold.second.finish_key + ".kvc";
      drop_page_cache(dir);
      HEARTH_ASSIGN_OR_RETURN(double dd, dd_direct_read_ms(row_file, a.rounds));
      run["dd_ms"] = dd;
      run["dd_gb_s"] = static_cast<double>(std::filesystem::file_size(row_file)) / dd / 1e6;
    }
    HEARTH_RETURN_IF_ERROR(add_restore_ratios(run, row_bytes));
    runs.push_back(std::move(run));
    if (a.on_case) a.on_case();
  }
  rt->shutdown();
  return runs;
}

Result<nlohmann::json> run_agents(const BenchArgs& a) {
  HEARTH_ASSIGN_OR_RETURN(auto rt, Runtime::create(RuntimeOptions{}));
  HEARTH_ASSIGN_OR_RETURN(ModelConfig cfg, base_config(a, Tier::kRam));
  HEARTH_RETURN_IF_ERROR(rt->load_model(cfg).status());
  HEARTH_ASSIGN_OR_RETURN(auto system, prompt_tokens(*rt, "bench", 1000, "system"));
  std::vector<std::vector<TokenId>> prompts;
  for (int i = 0; i < a.agents; ++i) {
    auto p = system;
    HEARTH_ASSIGN_OR_RETURN(
        auto q,
        rt->tokenize("bench", "\nAgent " + std::to_string(i) + ": summarise your task.", false));
    p.insert(p.end(), q.begin(), q.end());
    prompts.push_back(std::move(p));
  }
  RequestParams params;
  params.response_tokens = 1;
  params.sampling.temperature = 0;
  std::vector<double> ttfts(static_cast<size_t>(a.agents));
  HEARTH_ASSIGN_OR_RETURN(auto first, ttft(*rt, "bench", prompts[0], params));
  ttfts[0] = first.first;
  wait_counter(*rt, "saves_cold", 1);
  std::vector<std::future<Result<std::pair<double, RequestStats>>>> fs;
  for (int i = 1; i < a.agents; ++i)
    fs.push_back(std::async(std::launch::async, [&, i] {
      return ttft(*rt, "bench", prompts[static_cast<size_t>(i)], params);
    }));
  for (int i = 1; i < a.agents; ++i) {
    HEARTH_ASSIGN_OR_RETURN(auto r, fs[static_cast<size_t>(i - 1)].get());
    ttfts[static_cast<size_t>(i)] = r.first;
  }
  auto c = rt->cache_counters();
  return nlohmann::json{{"n", a.agents},
                        {"cold_prefills", c["runtime_misses"]},
                        {"prefix_hits", c["runtime_hits_longest_prefix"]},
                        {"ttft_ms", ttfts}};
}

// out["restore_row"]: one row of a.restore_tokens tokens of this model's KV (the bytes per
// token measured by the runs) restored from each tier at the cache level.
Status add_restore_row(const BenchArgs& a, nlohmann::json& out, const std::string& shm,
                       const std::string& disk) {
  double per_token = 0;
  for (const auto& r : out["runs"])
    per_token = std::max(per_token, r["kv_bytes_per_token"].get<double>());
  if (per_token == 0) return FailedPrecondition("no run measured the KV bytes per token");
  const auto bytes = static_cast<uint64_t>(per_token * a.restore_tokens);
  auto fig = restore_row_figures(bytes, shm, disk, a.rounds);
  std::error_code ec;
  std::filesystem::remove_all(shm, ec);
  std::filesystem::remove_all(disk, ec);
  HEARTH_RETURN_IF_ERROR(fig.status());
  out["restore_row"] = std::move(fig).value();
  out["restore_row"]["tokens"] = a.restore_tokens;
  return OkStatus();
}

// TTFT by prompt length: cold (prefill everything; the mean over the tiers, it does not
// depend on one) and, per tier (one color each), warm (prefix restore + 16 tokens, solid)
// and exact (restore only, dashed).
Status plot_runs(const std::string& path, const nlohmann::json& runs) {
  std::map<int, std::pair<double, int>> cold;  // tokens -> (sum, count)
  std::vector<PlotSeries> series(1);
  series[0].name = "cold (prefill)";
  series[0].color = "#374151";
  const std::map<std::string, std::string> colors = {
      {"ram", "#1d4ed8"}, {"ram_file", "#15803d"}, {"disk", "#c2410c"}};
  for (const auto& r : runs) {
    const int n = r["tokens"].get<int>();
    const std::string tier = r["tier"].get<std::string>();
    cold[n].first += r["cold_ttft_ms"].get<double>();
    cold[n].second += 1;
    for (const char* kind : {"warm", "exact"}) {
      const std::string name = std::string(kind) + " (" + tier + ")";
      auto it = std::find_if(series.begin(), series.end(),
                             [&](const PlotSeries& s) { return s.name == name; });
      if (it == series.end()) {
        PlotSeries s;
        s.name = name;
        s.dashed = std::string(kind) == "exact";
        if (auto c = colors.find(tier); c != colors.end()) s.color = c->second;
        series.push_back(std::move(s));
        it = series.end() - 1;
      }
      it->points.emplace_back(n, r[std::string(kind) + "_ttft_ms"].get<double>());
    }
  }
  for (const auto& [n, sum] : cold) series[0].points.emplace_back(n, sum.first / sum.second);
  PlotOptions o;
  o.title = "Time to first token: cold vs warm vs exact";
  o.x_label = "prompt tokens";
  o.y_label = "TTFT (ms)";
  o.log_y = true;
  return write_svg_plot(path, o, series);
}

int run_bench(BenchArgs a) {
  // Cases: each prompt size on each of the 3 tiers, then the agents scenario.
  ProgressBar bar("bench cold-warm", ProgressBar::Unit::kCount, a.quiet);
  const uint64_t n_cases = 3 * a.sizes.size() + (a.agents > 0 ? 1 : 0);
  uint64_t cases = 0;
  bar.update(0, n_cases);
  a.on_case = [&] { bar.update(++cases, n_cases); };
  const auto base = std::filesystem::temp_directory_path() /
                    ("hearth-bench-coldwarm-" + std::to_string(::getpid()));
  std::string shm = "/dev/shm/hearth-bench-coldwarm-" + std::to_string(::getpid());
  if (!std::filesystem::exists("/dev/shm")) shm = (base / "ram_file").string();
  nlohmann::json out;
  out["model"] = a.model;
  out["runs"] = nlohmann::json::array();
  int rc = 0;
  for (Tier tier : {Tier::kRam, Tier::kRamFile, Tier::kDisk}) {
    const std::string dir = tier == Tier::kRamFile ? shm : (base / "disk").string();
    auto runs = run_tier(a, tier, dir);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (!runs.ok()) {
      std::fprintf(stderr, "bench cold-warm (%s): %s\n", tier_name(tier),
                   runs.status().to_string().c_str());
      rc = 1;
      continue;
    }
    for (auto& r : *runs) out["runs"].push_back(r);
  }
  if (a.restore_tokens > 0) {
    if (Status s = add_restore_row(a, out, shm + "-row", (base / "disk-row").string()); !s.ok()) {
      std::fprintf(stderr, "bench cold-warm (restore_row): %s\n", s.to_string().c_str());
      rc = 1;
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(base, ec);
  if (a.agents > 0) {
    auto agents = run_agents(a);
    if (!agents.ok()) {
      std::fprintf(stderr, "bench cold-warm (agents): %s\n", agents.status().to_string().c_str());
      rc = 1;
    } else {
      out["agents"] = *agents;
    }
  }
  if (!a.plot.empty()) {
    if (Status s = plot_runs(a.plot, out["runs"]); !s.ok()) {
      std::fprintf(stderr, "bench cold-warm: --plot: %s\n", s.to_string().c_str());
      rc = 1;
    }
  }
  bar.update(n_cases, n_cases);
  bar.finish();
  if (!out["runs"].empty()) {  // the device every run loaded the model on
    out["device"] = out["runs"][0]["device"];
    out["n_gpu_layers"] = out["runs"][0]["n_gpu_layers"];
  }
  if (a.json) {
    std::printf("%s\n", json_text(out, 2).c_str());
    return rc;
  }
  if (out.contains("device"))
    std::printf("device %s (%d GPU layers)\n", out["device"].get<std::string>().c_str(),
                out["n_gpu_layers"].get<int>());
  std::printf("%-7s %-9s %9s %9s %9s %9s %10s %9s %8s %7s %8s %8s %9s %7s %7s\n", "tokens", "tier",
              "cold_ms", "warm_ms", "tail_ms", "exact_ms", "row_bytes", "restore", "memcpy",
              "ratio", "pack_c", "pack_w", "cold_$", "dd", "vs_dd");
  for (const auto& r : out["runs"]) {
    std::printf("%-7d %-9s %9.2f %9.2f %9.2f %9.2f %10llu %9.2f %8.3f %7.2f",
                r["tokens"].get<int>(), r["tier"].get<std::string>().c_str(),
                r["cold_ttft_ms"].get<double>(), r["warm_ttft_ms"].get<double>(),
                r["tail_prefill_ms"].get<double>(), r["exact_ttft_ms"].get<double>(),
                static_cast<unsigned long long>(r["row_bytes"].get<uint64_t>()),
                r["exact_restore_ms"].get<double>(), r["memcpy_ms"].get<double>(),
                r["restore_vs_memcpy"].get<double>());
    std::printf(" %8.2f %8.2f", r["cold_save_pack_ms"].get<double>(),
                r["warm_save_pack_ms"].get<double>());
    if (r.contains("cold_cache_vs_dd"))
      std::printf(" %9.2f %7.2f %7.2f", r["cold_cache_restore_ms"].get<double>(),
                  r["dd_ms"].get<double>(), r["cold_cache_vs_dd"].get<double>());
    std::printf("\n");
  }
  if (out.contains("restore_row")) {
    const auto& rr = out["restore_row"];
    std::printf("restore of one %d-token row (%llu bytes, memcpy %.2f ms):\n",
                rr["tokens"].get<int>(),
                static_cast<unsigned long long>(rr["payload_bytes"].get<uint64_t>()),
                rr["memcpy_ms"].get<double>());
    for (const char* c :
         {"ram", "ram_file", "ram_file_mapped", "ram_file_pread", "ram_file_restarted",
          "disk_warm_cache", "disk_cold_cache", "disk_cold_cache_buffered"}) {
      if (!rr.contains(c)) continue;
      const auto& f = rr[c];
      std::printf("  %-24s %9.2f ms %6.2fx memcpy %6.2f GB/s", c, f["restore_ms"].get<double>(),
                  f["restore_vs_memcpy"].get<double>(), f["gb_s"].get<double>());
      if (f.contains("vs_dd"))
        std::printf("  (dd %.2f GB/s: %.0f%%)", f["dd_gb_s"].get<double>(),
                    100 * f["vs_dd"].get<double>());
      if (f.contains("first_restore_ms"))
        std::printf("  (first read %.2f ms)", f["first_restore_ms"].get<double>());
      std::printf("\n");
    }
  }
  if (out.contains("agents")) {
    const auto& g = out["agents"];
    std::printf("agents: %d, cold prefills %llu, prefix hits %llu, ttft_ms", g["n"].get<int>(),
                static_cast<unsigned long long>(g["cold_prefills"].get<uint64_t>()),
                static_cast<unsigned long long>(g["prefix_hits"].get<uint64_t>()));
    for (const auto& t : g["ttft_ms"]) std::printf(" %.2f", t.get<double>());
    std::printf("\n");
  }
  return rc;
}

Registrar reg("bench_coldwarm", [](CLI::App& root) {
  CLI::App* bench = bench_command(root);
  auto* cmd = bench->add_subcommand("cold-warm", "Time to first token, cold vs warm cache");
  auto args = std::make_shared<BenchArgs>();
  cmd->add_option("-m,--model", args->model, "GGUF model file")->required();
  cmd->add_flag("--json", args->json, "JSON output");
  cmd->add_option("--plot", args->plot, "Also draw TTFT by prompt length and tier as an SVG file");
  cmd->add_option("--agents", args->agents, "Agents in the shared-prefix scenario (0 = skip)");
  cmd->add_option("--threads", args->threads, "Engine threads (0 = all cores)");
  add_device_flags(cmd, &args->device);
  cmd->add_option("--tokens", args->sizes, "Prompt sizes")->delimiter(',');
  cmd->add_option("--restore-tokens", args->restore_tokens,
                  "Tokens of the one large row restored from each tier at the cache level "
                  "(0 = skip)");
  cmd->add_option("--rounds", args->rounds, "Exact hits per case (medians)")
      ->check(CLI::Range(1, 100));
  cmd->add_flag("-q,--quiet", args->quiet,
                "No progress bar (there is none when stderr is not a terminal)");
  cmd->callback([args] { exit_code() = run_bench(*args); });
});

}  // namespace
}  // namespace hearth::cli
