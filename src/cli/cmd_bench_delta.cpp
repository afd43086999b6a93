// `hearth bench delta -m MODEL [--turns 20] [--json]`: the bytes a chat replay stores in
// the cache with delta rows off (every row whole) and on (rows continuing a shorter row
// store only their new positions), per tier, and whether the replies are identical.
// Each turn appends a user message to the conversation and generates a reply; there is
// no slot affinity, so every turn after the first restores the conversation from the
// cache (through a delta chain when deltas are on).
//   tiers[]  tier, full_bytes / delta_bytes (the tier's rows after the replay, summed),
//            ratio = full_bytes / delta_bytes, rows, delta_saves, identical (every
//            turn's generated tokens equal), full_ms / delta_ms (the replay's wall time)
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/device_flags.h"
#include "cli/registry.h"
#include "common/json_text.h"
#include "hearth/cache/config.h"
#include "hearth/runtime/runtime.h"

namespace hearth::cli {
namespace {

using namespace hearth::runtime;
using Clock = std::chrono::steady_clock;

struct DeltaArgs {
  std::string model;
  bool json = false;
  int turns = 20;
  int system_tokens = 256;
  int user_tokens = 48;
  int reply_tokens = 8;
  int depth = 8;
  int threads = 0;
  std::vector<std::string> tiers = {"ram", "disk"};
  std::string dir;     // where the disk tier lives (default: a temporary directory)
  DeviceFlags device;  // ModelConfig::device, n_gpu_layers
};

struct ReplayResult {
  std::vector<std::vector<TokenId>> replies;
  uint64_t bytes = 0;
  uint64_t rows = 0;
  uint64_t delta_saves = 0;
  uint64_t cold_turns = 0;
  double ms = 0;
};

Result<std::vector<TokenId>> text_tokens(Runtime& rt, size_t n, const std::string& seed) {
  std::string text;
  std::vector<TokenId> out;
  for (int round = 0; out.size() < n && round < 64; ++round) {
    text += seed + " asked about the " + std::to_string(round * 7919 + n) +
            " lanterns by the harbour, and the keeper answered with a story of the tide. ";
    HEARTH_ASSIGN_OR_RETURN(out, rt.tokenize("bench", text));
  }
  if (out.size() < n) return Internal("could not build a long enough message");
  out.resize(n);
  return out;
}

Result<ReplayResult> replay(const DeltaArgs& a, Tier tier, uint32_t depth, const std::string& dir) {
  RuntimeOptions o;
  o.cache.disk_dir = dir;
  o.cache.max_delta_depth = depth;
  HEARTH_ASSIGN_OR_RETURN(auto rt, Runtime::create(o));
  ModelConfig c;
  c.id = "bench";
  c.model_path = a.model;
  c.n_threads = a.threads;
  c.n_ctx = a.system_tokens + a.turns * (a.user_tokens + a.reply_tokens) + 64;
  c.n_seq_max = 1;
  c.slot_affinity = false;  // every turn restores from the cache
  c.tier = tier;
  c.policy.min_tokens = 16;  // fixed (not the cost rule): the same rows every run
  HEARTH_RETURN_IF_ERROR(apply_device_flags(a.device, c));
  HEARTH_RETURN_IF_ERROR(rt->load_model(c).status());
  ReplayResult out;
  HEARTH_ASSIGN_OR_RETURN(std::vector<TokenId> context,
                          text_tokens(*rt, static_cast<size_t>(a.system_tokens), "system"));
  RequestParams p;
  p.response_tokens = a.reply_tokens;
  p.sampling.temperature = 0;
  const auto t0 = Clock::now();
  for (int turn = 0; turn < a.turns; ++turn) {
    HEARTH_ASSIGN_OR_RETURN(auto user, text_tokens(*rt, static_cast<size_t>(a.user_tokens),
                                                   "user " + std::to_string(turn)));
    context.insert(context.end(), user.begin(), user.end());
    HEARTH_ASSIGN_OR_RETURN(CompletionResult r, rt->complete_tokens("bench", context, p));
    if (r.cache_hit_kind == CacheHitKind::kCold) ++out.cold_turns;
    out.replies.push_back(r.generated);
    context = r.context_tokens;
    if (!rt->cache_flush()) return DeadlineExceeded("bench delta: saves did not publish");
  }
  out.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  for (const CacheRowSummary& row : rt->cache_rows()) {
    if (row.tier != tier || row.in_flight) continue;
    out.bytes += row.size_bytes;
    ++out.rows;
  }
  out.delta_saves = rt->cache_counters()["delta_saves"];
  rt->shutdown();
  return out;
}

int run_bench(const DeltaArgs& a) {
  if (a.turns < 1 || a.user_tokens < 1 || a.reply_tokens < 1 || a.system_tokens < 1) {
    std::fprintf(stderr, "bench delta: --turns and the token counts must be >= 1\n");
    return 2;
  }
  if (a.depth < 1 || a.depth > static_cast<int>(cache::kMaxDeltaDepth)) {
    std::fprintf(stderr, "bench delta: --depth must be in 1..%u\n", cache::kMaxDeltaDepth);
    return 2;
  }
  std::string base = a.dir;
  if (base.empty()) {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "hearth-bench-delta-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      std::fprintf(stderr, "bench delta: cannot create a temporary directory\n");
      return 1;
    }
    base = tmpl;
  }
  nlohmann::json tiers = nlohmann::json::array();
  int rc = 0;
  int run = 0;
  for (const std::string& name : a.tiers) {
    auto tier = tier_from_name(name);
    if (!tier || *tier == Tier::kRamFile) {
      std::fprintf(stderr, "bench delta: --tiers takes ram and disk, not '%s'\n", name.c_str());
      return 2;
    }
    ReplayResult r[2];
    for (int i = 0; i < 2; ++i) {
      auto res = replay(a, *tier, i == 0 ? 0u : static_cast<uint32_t>(a.depth),
                        base + "/run" + std::to_string(run++));
      if (!res.ok()) {
        std::fprintf(stderr, "bench delta: %s\n", res.status().to_string().c_str());
        return 1;
      }
      r[i] = std::move(res).value();
    }
    const bool identical = r[0].replies == r[1].replies;
    if (!identical) rc = 1;
    tiers.push_back({{"tier", tier_name(*tier)},
                     {"full_bytes", r[0].bytes},
                     {"delta_bytes", r[1].bytes},
                     {"ratio", r[1].bytes ? double(r[0].bytes) / double(r[1].bytes) : 0.0},
                     {"full_rows", r[0].rows},
                     {"delta_rows", r[1].rows},
                     {"delta_saves", r[1].delta_saves},
                     {"cold_turns", r[1].cold_turns},
                     {"identical", identical},
                     {"full_ms", r[0].ms},
                     {"delta_ms", r[1].ms}});
  }
  if (a.dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(base, ec);
  }
  nlohmann::json out = {{"model", a.model},
                        {"turns", a.turns},
                        {"system_tokens", a.system_tokens},
                        {"user_tokens", a.user_tokens},
                        {"reply_tokens", a.reply_tokens},
                        {"max_delta_depth", a.depth},
                        {"tiers", tiers}};
  if (a.json) {
    std::printf("%s\n", json_text(out).c_str());
    return rc;
  }
  std::printf("%-5s %14s %14s %7s %6s %s\n", "tier", "full_bytes", "delta_bytes", "ratio", "rows",
              "identical");
  for (const auto& t : tiers) {
    std::printf("%-5s %14llu %14llu %6.2fx %6llu %s\n", t["tier"].get<std::string>().c_str(),
                static_cast<unsigned long long>(t["full_bytes"].get<uint64_t>()),
                static_cast<unsigned long long>(t["delta_bytes"].get<uint64_t>()),
                t["ratio"].get<double>(),
                static_cast<unsigned long long>(t["delta_rows"].get<uint64_t>()),
                t["identical"].get<bool>() ? "yes" : "NO");
  }
  return rc;
}

Registrar reg("bench_delta", [](CLI::App& root) {
  CLI::App* bench = bench_command(root);
  auto* cmd =
      bench->add_subcommand("delta", "Cache bytes of a chat replay with delta rows on vs off");
  auto args = std::make_shared<DeltaArgs>();
  cmd->add_option("-m,--model", args->model, "GGUF model file")->required();
  cmd->add_flag("--json", args->json, "JSON output");
  cmd->add_option("--turns", args->turns, "Chat turns (default 20)");
  cmd->add_option("--system-tokens", args->system_tokens, "Tokens before the first turn");
  cmd->add_option("--user-tokens", args->user_tokens, "Tokens of each user message");
  cmd->add_option("--reply-tokens", args->reply_tokens, "Tokens generated each turn");
  cmd->add_option("--depth", args->depth, "max_delta_depth of the delta run (default 8)");
  cmd->add_option("--threads", args->threads, "Engine threads (0 = all cores)");
  add_device_flags(cmd, &args->device);
  cmd->add_option("--tiers", args->tiers, "Tiers to measure (ram, disk)")->delimiter(',');
  cmd->add_option("--dir", args->dir, "Directory for the disk tier (default: a temporary one)");
  cmd->callback([args] { exit_code() = run_bench(*args); });
});

}  // namespace
}  // namespace hearth::cli
