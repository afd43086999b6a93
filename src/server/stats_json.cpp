#include "server/stats_json.h"

namespace hearth::server {
namespace {

using nlohmann::json;
namespace rt = hearth::runtime;

int64_t counter(const std::map<std::string, int64_t>& c, const std::string& name) {
  auto it = c.find(name);
  return it == c.end() ? 0 : it->second;
}

}  // namespace

json server_stats_json(ServerContext& ctx) {
  const GenerationTotals totals = ctx.metrics.totals();
  const auto counters = ctx.service.cache_counters();

  json models = json::array();
  for (const ModelDescription& m : ctx.service.list_models()) {
    json entry = {{"id", m.id},
                  {"n_seq_max", m.n_seq_max},
                  {"active_sequences", m.active_requests},
                  {"queued_requests", m.queued_requests},
                  {"scheduler_steps", m.scheduler_steps},
                  {"completion_tokens", 0},
                  {"decode_seconds", 0.0},
                  {"tokens_per_second", 0.0},
                  {"last_tokens_per_second", 0.0}};
    if (auto it = totals.models.find(m.id); it != totals.models.end()) {
      const ModelThroughput& t = it->second;
      entry["completion_tokens"] = t.completion_tokens;
      entry["decode_seconds"] = t.decode_seconds;
      entry["tokens_per_second"] =
          t.decode_seconds > 0 ? static_cast<double>(t.completion_tokens) / t.decode_seconds : 0.0;
      entry["last_tokens_per_second"] = t.last_tokens_per_second;
    }
    models.push_back(std::move(entry));
  }

  json tiers = json::array();
  for (const TierUsage& t : ctx.service.tier_usage()) {
    tiers.push_back(
        {{"tier", t.tier}, {"bytes", t.bytes}, {"rows", t.rows}, {"quota_bytes", t.quota_bytes}});
  }

  // Requests by how their prompt met the cache: the runtime's per-request counters.
  json hits = json::object();
  for (auto kind :
       {rt::CacheHitKind::kExact, rt::CacheHitKind::kResume, rt::CacheHitKind::kPartial,
        rt::CacheHitKind::kSticky, rt::CacheHitKind::kContinuation, rt::CacheHitKind::kCold}) {
    hits[rt::cache_hit_kind_name(kind)] =
        counter(counters, std::string("runtime_") + rt::hit_counter_name(kind));
  }
  json saves = json::object();
  for (const char* reason : {"cold", "continued", "finish", "evict", "shutdown"})
    saves[reason] = counter(counters, std::string("saves_") + reason);
  saves["dropped"] = counter(counters, "saves_dropped");
  saves["errors"] = counter(counters, "save_errors");

  json cache_counters = json::object();
  for (const auto& [k, v] : counters) cache_counters[k] = v;

  return {{"requests",
           {{"in_flight", ctx.metrics.in_flight.load()},
            {"queued", ctx.service.queue_depth()},
            {"rejected_busy", ctx.metrics.rejected_busy.load()},
            {"client_disconnects", ctx.metrics.client_disconnects.load()},
            {"cancelled", totals.cancelled}}},
          {"tokens",
           {{"prompt", totals.prompt_tokens},
            {"cached", totals.cached_tokens},
            {"completion", totals.completion_tokens}}},
          {"ttft",
           {{"count", totals.ttft_count},
            {"mean_seconds", totals.ttft_count > 0
                                 ? totals.ttft_seconds_sum / static_cast<double>(totals.ttft_count)
                                 : 0.0}}},
          {"last_tokens_per_second", totals.last_tokens_per_second},
          {"models", models},
          {"cache",
           {{"tiers", tiers},
            {"hits", hits},
            {"saves", saves},
            {"evictions", counter(counters, "evictions")},
            {"counters", cache_counters}}}};
}

}  // namespace hearth::server
