// `hearth bench cache [--json] [--quick]`: save/load latency and throughput per
// tier for 1, 16 and 64 MiB payloads, memcpy bandwidth measured in the same run
// (each load is also reported as a fraction of it), and the two prefix lookups
// over a 32k-token prompt with a populated index. --quick runs every case once
// (same keys, noisier figures) for smoke tests.
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "cli/bench_util.h"
#include "cli/progress.h"
#include "cli/registry.h"
#include "cli/svg_plot.h"
#include "common/json_text.h"
#include "hearth/cache/cache.h"

namespace hearth::cli {
namespace {

using namespace hearth::cache;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Throughput figures use the best run: on a shared machine the other runs
// measure the neighbours. memcpy and loads are treated the same way, so their
// ratio stays fair.
double best(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}

// Sink so the compiler cannot drop copies.
volatile uint8_t g_sink;

double memcpy_gbps(size_t bytes, int runs) {
  std::vector<uint8_t> src(bytes, 1), dst(bytes, 0);
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto t = Clock::now();
    std::memcpy(dst.data(), src.data(), bytes);
    ms.push_back(ms_since(t));
    g_sink = dst[i % bytes];
  }
  return static_cast<double>(bytes) / 1e6 / best(ms);
}

KeyNamespace bench_ns() {
  KeyNamespace ns;
  ns.fingerprint.fill(0x42);
  ns.quant = QuantType::kQ4_K_M;
  ns.ctx_params_hash.fill(0x17);
  return ns;
}

KvcBuildMeta bench_meta(std::vector<Token> tokens) {
  KvcBuildMeta m;
  m.save_reason = SaveReason::kCold;
  m.quant_bits = 4;
  m.ns = bench_ns();
  m.tokens = std::move(tokens);
  m.context_size = 32768;
  m.hostname = "bench";
  return m;
}

struct TierResult {
  double save_ms = 0, load_ms = 0, load_gbps = 0;
};

TierResult bench_tier(Cache& cache, Tier tier, size_t bytes, uint32_t salt, int saves, int loads) {
  std::mt19937 rng(salt);
  std::vector<uint8_t> payload(bytes);
  for (size_t i = 0; i < bytes; i += 8) payload[i] = static_cast<uint8_t>(rng());
  std::vector<double> save_ms, load_ms;
  std::vector<CacheKey> keys;
  for (int s = 0; s < saves; ++s) {
    std::vector<Token> toks = {salt, static_cast<Token>(s), static_cast<Token>(bytes)};
    auto t = Clock::now();
    auto key = cache.save(tier, bench_meta(toks), payload);
    save_ms.push_back(ms_since(t));
    if (!key.ok()) {
      std::fprintf(stderr, "bench: save failed: %s\n", key.status().to_string().c_str());
      return {};
    }
    keys.push_back(*key);
  }
  std::vector<uint8_t> dst(bytes, 0);  // pre-faulted caller buffer
  for (int l = 0; l < loads; ++l) {
    const CacheKey& key = keys[static_cast<size_t>(l) % keys.size()];
    auto t = Clock::now();
    auto lease = cache.checkout(key);
    Status st = lease.ok() ? lease->read_payload(dst) : lease.status();
    load_ms.push_back(ms_since(t));
    if (!st.ok()) {
      std::fprintf(stderr, "bench: load failed: %s\n", st.to_string().c_str());
      return {};
    }
  }
  TierResult r;
  r.save_ms = median(save_ms);
  r.load_ms = best(load_ms);
  r.load_gbps = static_cast<double>(bytes) / 1e6 / r.load_ms;
  return r;
}

struct BenchOptions {
  bool json = false;
  // One save, load and lookup per case instead of the best of several: every
  // figure is still produced, so scripts and tests see the full report.
  bool quick = false;
  std::string dir;
  std::string plot;    // --plot FILE.svg
  bool quiet = false;  // no progress bar
  std::string redis;   // --redis URL: also measure the remote tier
};

// Restore of one 2,048-token TinyLlama-preset row (22 layers x 2 x 256 f16 per token:
// 46,137,344 payload bytes) on node B from the remote tier (fetch, verify, pull into
// ram, read), against the ram and disk tiers on node A. Node A's saves also publish
// to Redis. Disk loads come from the page cache, as in the tier table.
Status bench_remote(const BenchOptions& opt, const std::string& disk_dir, nlohmann::json& out) {
  constexpr size_t kRowBytes = size_t{2048} * 22 * 2 * 256 * 2;
  CacheConfig a_cfg;
  a_cfg.ram_quota_bytes = 1ull << 30;
  a_cfg.disk_dir = disk_dir + "-remote";
  a_cfg.disk_quota_bytes = 1ull << 30;
  a_cfg.sweep_interval_ms = 0;
  a_cfg.remote.url = opt.redis;
  CacheConfig b_cfg = a_cfg;
  b_cfg.disk_dir.clear();
  auto a = Cache::open(a_cfg);
  if (!a.ok()) return a.status();
  auto b = Cache::open(b_cfg);
  if (!b.ok()) return b.status();
  const int loads = opt.quick ? 1 : 5;
  const uint32_t salt = 7001;
  TierResult ram = bench_tier(**a, Tier::kRam, kRowBytes, salt, 1, loads);
  TierResult disk = bench_tier(**a, Tier::kDisk, kRowBytes, salt + 1, 1, loads);
  const std::vector<Token> toks = {salt, 0, static_cast<Token>(kRowBytes)};
  const CacheKey key = make_key(bench_ns(), toks);
  std::vector<uint8_t> dst(kRowBytes, 0);
  std::vector<double> ms;
  for (int l = 0; l < loads; ++l) {
    (*b)->gc();  // drop the ram copy the previous pull made
    auto t = Clock::now();
    if (!(*b)->lookup_exact(key)) return Unavailable("bench cache: the remote row was not found");
    auto lease = (*b)->checkout(key);
    Status st = lease.ok() ? lease->read_payload(dst) : lease.status();
    ms.push_back(ms_since(t));
    HEARTH_RETURN_IF_ERROR(st);
  }
  out["remote"] = {{"row_bytes", kRowBytes},
                   {"chunk_bytes", a_cfg.remote.chunk_bytes},
                   {"ram_load_ms", ram.load_ms},
                   {"disk_load_ms", disk.load_ms},
                   {"remote_restore_ms", best(ms)},
                   {"remote_restore_median_ms", median(ms)},
                   {"ram_save_and_publish_ms", ram.save_ms}};
  a->reset();
  std::error_code ec;
  std::filesystem::remove_all(a_cfg.disk_dir, ec);
  return OkStatus();
}

// Restore (load) bandwidth per tier by payload size, against memcpy's in the same run.
Status plot_restore(const std::string& path, const nlohmann::json& out) {
  std::vector<PlotSeries> series;
  std::vector<double> sizes;
  for (const auto& [tier, per] : out["tiers"].items()) {
    PlotSeries s;
    s.name = tier + " restore";
    for (const auto& [size, r] : per.items()) {
      const double mib = std::stod(size);  // "16MiB" -> 16
      s.points.emplace_back(mib, r["load_gbps"].get<double>());
      sizes.push_back(mib);
    }
    series.push_back(std::move(s));
  }
  PlotSeries memcpy_line;
  memcpy_line.name = "memcpy (64 MiB)";
  memcpy_line.dashed = true;
  for (double mib : sizes) memcpy_line.points.emplace_back(mib, out["memcpy_gbps"].get<double>());
  series.push_back(std::move(memcpy_line));
  PlotOptions o;
  o.title = "KV row restore bandwidth per tier";
  o.x_label = "row size (MiB)";
  o.y_label = "GB/s";
  o.log_x = true;
  return write_svg_plot(path, o, series);
}

int run_bench(const BenchOptions& opt) {
  const bool json = opt.json;
  std::string dir_base = opt.dir;
  if (dir_base.empty()) dir_base = std::filesystem::temp_directory_path().string();
  std::string tag = std::to_string(::getpid());
  std::string disk_dir = dir_base + "/hearth-bench-cache-" + tag;
  std::string shm_dir = default_ram_file_dir() + "-bench-" + tag;
  CacheConfig cfg;
  cfg.ram_quota_bytes = 2ull << 30;
  cfg.ram_file_dir = shm_dir;
  cfg.ram_file_quota_bytes = 2ull << 30;
  cfg.disk_dir = disk_dir;
  cfg.disk_quota_bytes = 4ull << 30;
  cfg.sweep_interval_ms = 0;
  auto opened = Cache::open(cfg);
  if (!opened.ok()) {
    std::fprintf(stderr, "bench cache: %s\n", opened.status().to_string().c_str());
    return 1;
  }
  Cache& cache = **opened;

  nlohmann::json out;
  double mc = memcpy_gbps(64u << 20, opt.quick ? 3 : 9);
  out["memcpy_gbps"] = mc;
  const std::pair<const char*, size_t> sizes[] = {
      {"1MiB", 1u << 20}, {"16MiB", 16u << 20}, {"64MiB", 64u << 20}};
  uint32_t salt = 1;
  // Cases: 3 tiers x 3 sizes, then the prefix lookups.
  ProgressBar bar("bench cache", ProgressBar::Unit::kCount, opt.quiet);
  uint64_t cases = 0;
  const uint64_t n_cases = 3 * std::size(sizes) + 1;
  bar.update(0, n_cases);
  for (Tier tier : {Tier::kRam, Tier::kRamFile, Tier::kDisk}) {
    for (const auto& [name, bytes] : sizes) {
      bar.update(cases++, n_cases);
      int saves = opt.quick ? 1 : bytes >= (64u << 20) ? 2 : 3;
      TierResult r = bench_tier(cache, tier, bytes, salt++, saves, opt.quick ? 1 : 9);
      out["tiers"][tier_name(tier)][name] = {{"save_ms", r.save_ms},
                                             {"load_ms", r.load_ms},
                                             {"load_gbps", r.load_gbps},
                                             {"load_vs_memcpy", mc > 0 ? r.load_gbps / mc : 0}};
    }
    cache.gc();
  }

  // Prefix lookups over a 32k-token prompt. Populate the index with 256
  // unrelated 4k-token rows (16 in quick mode), plus rows sharing the prompt's
  // first 8192 tokens (stride-aligned) and first 30000 tokens (then diverging).
  std::mt19937 rng(7);
  std::vector<Token> prompt(32768);
  for (auto& t : prompt) t = rng() % 150000;
  std::vector<uint8_t> tiny(64, 1);
  const int filler_rows = opt.quick ? 16 : 256;
  for (int i = 0; i < filler_rows; ++i) {
    std::vector<Token> t(4096);
    for (auto& x : t) x = rng() % 150000;
    (void)cache.save(Tier::kRam, bench_meta(t), tiny);
  }
  (void)cache.save(Tier::kRam, bench_meta({prompt.begin(), prompt.begin() + 8192}), tiny);
  std::vector<Token> fork(prompt.begin(), prompt.begin() + 30000);
  fork.push_back(999999);
  (void)cache.save(Tier::kRam, bench_meta(fork), tiny);

  std::vector<double> walk_ms, radix_ms;
  size_t walk_hit = 0, radix_hit = 0;
  const int lookups = opt.quick ? 3 : 21;
  for (int i = 0; i < lookups; ++i) {
    auto t = Clock::now();
    auto h = cache.lookup_longest_prefix(bench_ns(), prompt, 256, 256);
    walk_ms.push_back(ms_since(t));
    walk_hit = h ? h->n_tokens : 0;
    t = Clock::now();
    auto r = cache.lookup_radix(bench_ns(), prompt);
    radix_ms.push_back(ms_since(t));
    radix_hit = r ? r->n_tokens : 0;
  }
  out["longest_prefix_32k_ms"] = median(walk_ms);
  out["longest_prefix_32k_best_ms"] = best(walk_ms);
  out["longest_prefix_32k_hit_tokens"] = walk_hit;
  out["radix_lcp_32k_ms"] = median(radix_ms);
  out["radix_lcp_32k_best_ms"] = best(radix_ms);
  out["radix_lcp_32k_hit_tokens"] = radix_hit;
  out["index_rows"] = cache.row_count();
  bar.update(n_cases, n_cases);
  bar.finish();
  opened->reset();
  if (!opt.redis.empty()) {
    if (Status s = bench_remote(opt, disk_dir, out); !s.ok()) {
      std::fprintf(stderr, "bench cache: --redis: %s\n", s.to_string().c_str());
      return 1;
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(disk_dir, ec);
  std::filesystem::remove_all(shm_dir, ec);

  if (!opt.plot.empty()) {
    if (Status s = plot_restore(opt.plot, out); !s.ok()) {
      std::fprintf(stderr, "bench cache: --plot: %s\n", s.to_string().c_str());
      return 1;
    }
  }
  if (json) {
    std::printf("%s\n", json_text(out, 2).c_str());
    return 0;
  }
  std::printf("memcpy: %.2f GB/s\n", mc);
  for (auto& [tier, per] : out["tiers"].items()) {
    for (auto& [size, r] : per.items()) {
      std::printf("%-9s %-6s save %8.2f ms  load %8.3f ms  %6.2f GB/s  (%.2fx memcpy)\n",
                  tier.c_str(), size.c_str(), r["save_ms"].get<double>(),
                  r["load_ms"].get<double>(), r["load_gbps"].get<double>(),
                  r["load_vs_memcpy"].get<double>());
    }
  }
  std::printf("longest-prefix walk, 32k tokens, stride 256: %.3f ms (hit %zu tokens)\n",
              out["longest_prefix_32k_ms"].get<double>(), walk_hit);
  std::printf("radix lookup, 32k tokens: %.3f ms (hit %zu tokens)\n",
              out["radix_lcp_32k_ms"].get<double>(), radix_hit);
  if (out.contains("remote")) {
    const auto& r = out["remote"];
    std::printf("2,048-token TinyLlama row (%.1f MB): ram %.2f ms, disk %.2f ms, remote %.2f ms\n",
                r["row_bytes"].get<double>() / 1e6, r["ram_load_ms"].get<double>(),
                r["disk_load_ms"].get<double>(), r["remote_restore_ms"].get<double>());
  }
  return 0;
}

Registrar reg("bench_cache", [](CLI::App& root) {
  CLI::App* bench = bench_command(root);
  auto* cmd = bench->add_subcommand("cache", "KV cache save/load and lookup benchmark");
  auto opt = std::make_shared<BenchOptions>();
  cmd->add_flag("--json", opt->json, "JSON output");
  cmd->add_flag("--quick", opt->quick,
                "One run per case (every figure still reported, noisier): for smoke tests");
  cmd->add_option("--plot", opt->plot, "Also draw restore bandwidth per tier as an SVG file");
  cmd->add_option("--dir", opt->dir, "Parent directory for the disk tier (default: $TMPDIR)");
  cmd->add_option("--redis", opt->redis,
                  "Also restore a 2,048-token TinyLlama-preset row from this Redis "
                  "(redis://HOST:PORT[/DB]) on a second Cache (JSON key \"remote\")");
  cmd->add_flag("-q,--quiet", opt->quiet,
                "No progress bar (there is none when stderr is not a terminal)");
  cmd->callback([opt] { exit_code() = run_bench(*opt); });
});

}  // namespace
}  // namespace hearth::cli
