// `hearth bench delta -m MODEL [--turns 20] [--json]`: the bytes a chat replay stores in
// the cache with delta rows off (every row whole) and on (rows continuing a shorter row
// store only their new positions), per tier, and whether the replies are identical.
// Each turn appends a user message to the conversation and generates a reply; there is
// no slot affinity, so every turn after the first restores the conversation from the
// cache (through a delta chain when deltas are on).
//   tiers[]  tier, full_bytes / delta_bytes (the tier's rows after the replay, summed),
//            ratio = full_bytes / delta_bytes, rows, delta_saves, identical (every
//            turn's generated tokens equal), full_ms / delta_ms (the replay's wall time)
// With --redis URL both replays also publish to that Redis (each under its own key
// prefix, deleted afterwards), and `redis` reports the bytes stored there:
//   redis.full_bytes / delta_bytes (the row bytes each replay stored in Redis: chunk
//            keys, i.e. whole KVC rows or deltas), ratio, delta_publishes (rows stored
//            as deltas), restore_warm / restore_identical (a second runtime on the same
//            Redis, "node B", answers the last turn from the delta run's rows: a warm
//            start, and the reply equals node A's), restore_ms (that answer's time).
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "cache/redis_client.h"
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
  std::string redis;   // --redis URL: also publish to Redis and report its bytes
  DeviceFlags device;  // ModelConfig::device, n_gpu_layers
};

struct ReplayResult {
  std::vector<std::vector<TokenId>> replies;
  uint64_t bytes = 0;
  uint64_t rows = 0;
  uint64_t delta_saves = 0;
  uint64_t cold_turns = 0;
  double ms = 0;
  std::vector<TokenId> last_prompt;  // the last turn's prompt
  uint64_t redis_bytes = 0;          // row bytes published to Redis (--redis)
  uint64_t redis_delta_publishes = 0;
};

// Each replay's own key prefix in Redis, so runs never share rows.
std::string redis_prefix(const std::string& dir) {
  return "hearth-bench-delta:" + std::to_string(::getpid()) + ":" +
         std::filesystem::path(dir).filename().string() + ":";
}

// Deletes every key under `prefix` (the bench's rows, index and meta).
void redis_cleanup(const std::string& url, const std::string& prefix) {
  auto u = cache::parse_redis_url(url);
  if (!u.ok()) return;
  auto c = cache::RedisClient::connect(*u, 2000);
  if (!c.ok()) return;
  std::string cursor = "0";
  do {
    auto r = (*c)->command({"SCAN", cursor, "MATCH", prefix + "*", "COUNT", "1000"});
    if (!r.ok() || r->elements.size() != 2) return;
    cursor = r->elements[0].str;
    for (const auto& k : r->elements[1].elements) (void)(*c)->command({"DEL", k.str});
  } while (cursor != "0");
}

// Runtime options of one replay: its disk tier, depth, and (with --redis) the Redis key
// prefix of the replay run in `run_dir`.
RuntimeOptions replay_options(const DeltaArgs& a, uint32_t depth, const std::string& dir,
                              const std::string& run_dir) {
  RuntimeOptions o;
  o.cache.disk_dir = dir;
  o.cache.max_delta_depth = depth;
  if (!a.redis.empty()) {
    o.cache.remote.url = a.redis;
    o.cache.remote.key_prefix = redis_prefix(run_dir);
  }
  return o;
}

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

ModelConfig replay_model(const DeltaArgs& a, Tier tier) {
  ModelConfig c;
  c.id = "bench";
  c.model_path = a.model;
  c.n_threads = a.threads;
  c.n_ctx = a.system_tokens + a.turns * (a.user_tokens + a.reply_tokens) + 64;
  c.n_seq_max = 1;
  c.slot_affinity = false;  // every turn restores from the cache
  c.tier = tier;
  c.policy.min_tokens = 16;  // fixed (not the cost rule): the same rows every run
  return c;
}

Result<ReplayResult> replay(const DeltaArgs& a, Tier tier, uint32_t depth, const std::string& dir) {
  HEARTH_ASSIGN_OR_RETURN(auto rt, Runtime::create(replay_options(a, depth, dir, dir)));
  ModelConfig c = replay_model(a, tier);
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
    out.last_prompt = context;
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
  auto counters = rt->cache_counters();
  out.delta_saves = counters["delta_saves"];
  out.redis_bytes = counters["remote_bytes_stored"];
  out.redis_delta_publishes = counters["remote_delta_publishes"];
  rt->shutdown();
  return out;
}

// Node B: a second runtime on the delta run's Redis rows answers the last turn.
Status restore_on_b(const DeltaArgs& a, Tier tier, const std::string& dir, const ReplayResult& r,
                    nlohmann::json& out) {
  HEARTH_ASSIGN_OR_RETURN(auto rt, Runtime::create(replay_options(a, static_cast<uint32_t>(a.depth),
                                                                  dir + "-node-b", dir)));
  ModelConfig c = replay_model(a, tier);
  HEARTH_RETURN_IF_ERROR(apply_device_flags(a.device, c));
  HEARTH_RETURN_IF_ERROR(rt->load_model(c).status());
  // The row index comes from Redis in the background: wait for its first resync.
  for (int i = 0; i < 200 && rt->cache_counters()["remote_index_learned"] == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  RequestParams p;
  p.response_tokens = a.reply_tokens;
  p.sampling.temperature = 0;
  const auto t0 = Clock::now();
  HEARTH_ASSIGN_OR_RETURN(CompletionResult res, rt->complete_tokens("bench", r.last_prompt, p));
  out["restore_ms"] = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  out["restore_warm"] = res.cache_hit_kind != CacheHitKind::kCold;
  out["restore_identical"] = !r.replies.empty() && res.generated == r.replies.back();
  rt->shutdown();
  return OkStatus();
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
    std::string dirs[2];
    for (int i = 0; i < 2; ++i) {
      dirs[i] = base + "/run" + std::to_string(run++);
      auto res = replay(a, *tier, i == 0 ? 0u : static_cast<uint32_t>(a.depth), dirs[i]);
      if (!res.ok()) {
        std::fprintf(stderr, "bench delta: %s\n", res.status().to_string().c_str());
        return 1;
      }
      r[i] = std::move(res).value();
    }
    const bool identical = r[0].replies == r[1].replies;
    if (!identical) rc = 1;
    nlohmann::json redis;
    if (!a.redis.empty()) {
      redis = {
          {"full_bytes", r[0].redis_bytes},
          {"delta_bytes", r[1].redis_bytes},
          {"ratio", r[1].redis_bytes ? double(r[0].redis_bytes) / double(r[1].redis_bytes) : 0.0},
          {"delta_publishes", r[1].redis_delta_publishes}};
      Status st = restore_on_b(a, *tier, dirs[1], r[1], redis);
      for (const auto& d : dirs) redis_cleanup(a.redis, redis_prefix(d));
      if (!st.ok()) {
        std::fprintf(stderr, "bench delta: node B: %s\n", st.to_string().c_str());
        return 1;
      }
      if (!redis["restore_identical"].get<bool>()) rc = 1;
    }
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
                     {"delta_ms", r[1].ms},
                     {"redis", redis}});
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
    if (const auto& r = t["redis"]; !r.is_null()) {
      std::printf("%-5s %14llu %14llu %6.2fx %6s node B: %s, %s, %.1f ms\n", "redis",
                  static_cast<unsigned long long>(r["full_bytes"].get<uint64_t>()),
                  static_cast<unsigned long long>(r["delta_bytes"].get<uint64_t>()),
                  r["ratio"].get<double>(), "", r["restore_warm"].get<bool>() ? "warm" : "COLD",
                  r["restore_identical"].get<bool>() ? "identical" : "DIFFERENT",
                  r["restore_ms"].get<double>());
    }
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
  cmd->add_option("--redis", args->redis,
                  "Also publish to this Redis (redis://HOST:PORT[/DB]) and report its bytes");
  cmd->callback([args] { exit_code() = run_bench(*args); });
});

}  // namespace
}  // namespace hearth::cli
