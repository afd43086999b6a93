// hearth's native endpoints: model management, tokenizer access, cache
// administration, Prometheus metrics and the health probe.
#include <filesystem>
#include <set>
#include <tuple>

#include "hearth/runtime/runtime.h"
#include "server/connection_guard.h"
#include "server/http_util.h"
#include "server/lora_routes.h"
#include "server/model_path.h"
#include "server/model_settings.h"
#include "server/request_parse.h"
#include "server/stats_json.h"

namespace hearth::server {
namespace {

using nlohmann::json;

json sessions_json(const ModelDescription& m) {
  json out = json::array();
  for (const runtime::SessionInfo& s : m.sessions)
    out.push_back({{"id", s.id},
                   {"model", m.id},
                   {"seq", s.seq},
                   {"n_tokens", s.n_tokens},
                   {"busy", s.busy},
                   {"idle_ms", s.idle_ms}});
  return out;
}

json model_json(const ModelDescription& m) {
  return {{"id", m.id},
          {"path", m.model_path},
          {"context_length", m.context_size},
          {"device", m.device},
          {"n_gpu_layers", m.n_gpu_layers},
          {"n_vocab", m.n_vocab},
          {"embedding_dim", m.embedding_dim},
          {"has_chat_template", !m.chat_template.empty()},
          {"n_seq_max", m.n_seq_max},
          {"tier", runtime::tier_name(m.tier)},
          {"active_sequences", m.active_requests},
          {"queued_requests", m.queued_requests},
          {"scheduler_steps", m.scheduler_steps},
          {"n_threads", m.n_threads},
          {"n_batch", m.n_batch},
          {"batch_strategy", m.batch_strategy},
          {"session_idle_ms", m.session_idle_ms},
          {"sessions", sessions_json(m)},
          {"save_rates",
           {{"prefill_tokens_per_s", m.prefill_tokens_per_s},
            {"write_bytes_per_s", m.write_bytes_per_s}}}};
}

// Admin bodies are optional: none at all reads as {} (so `curl -X POST
// .../hearth/cache/gc` works, and a route with a required field names it).
std::optional<ApiError> parse_admin_body(const std::string& text, json& body) {
  return parse_json_object(text.empty() ? "{}" : text, body);
}

std::optional<ApiError> optional_string(const json& body, const char* key, std::string& out) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  if (!body[key].is_string())
    return invalid_request(std::string("'") + key + "' must be a string", key, "invalid_type");
  out = body[key].get<std::string>();
  return std::nullopt;
}

std::optional<ApiError> optional_int(const json& body, const char* key, int64_t& out) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  if (!body[key].is_number_integer() || body[key].get<int64_t>() < 0) {
    return invalid_request(std::string("'") + key + "' must be a non-negative integer", key,
                           "invalid_type");
  }
  out = body[key].get<int64_t>();
  return std::nullopt;
}

// The body's keys are the [[models]] table's (src/server/model_settings.h): an unknown
// key or a value of the wrong type or range is a 400 naming it.
void load_model(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = parse_admin_body(req.body, body)) return reply_error(res, *e);
  runtime::ModelConfig m = default_model_config();
  auto apply = [&m](const std::string& key, const json& value) {
    if (value.is_number_integer() && !value.is_number_unsigned())
      return apply_model_setting(m, key, value.get<int64_t>());
    if (value.is_number_unsigned() && value.get<uint64_t>() <= INT64_MAX)
      return apply_model_setting(m, key, static_cast<int64_t>(value.get<uint64_t>()));
    if (value.is_string()) return apply_model_setting(m, key, value.get<std::string>());
    if (value.is_boolean()) return apply_model_setting(m, key, value.get<bool>());
    return apply_model_setting(m, key, std::monostate{});
  };
  for (const auto& [key, value] : body.items()) {
    if (value.is_null()) continue;  // an explicit null leaves the default
    if (key == "lora") {  // [{path, scale}], each path under --models-dir like the model's
      if (!value.is_array())
        return reply_error(res, invalid_request("'lora' must be an array of {path, scale}", "lora",
                                                "invalid_type"));
      for (size_t i = 0; i < value.size(); ++i) {
        runtime::AdapterSpec spec;
        if (auto e = adapter_from_json(
                ctx, value[i], std::string("lora[").append(std::to_string(i)).append("]"), spec))
          return reply_error(res, *e);
        m.adapters.push_back(std::move(spec));
      }
      continue;
    }
    if (key == "policy" && value.is_object()) {
      for (const auto& [gate, v] : value.items()) {
        if (Status s = apply("policy." + gate, v); !s.ok())
          return reply_error(res, from_status(s, "policy." + gate));
      }
      continue;
    }
    if (Status s = apply(key, value); !s.ok()) return reply_error(res, from_status(s, key));
  }
  if (m.model_path.empty())
    return reply_error(res, invalid_request("'path' is required", "path", "missing_field"));
  auto resolved = resolve_model_path(ctx.config.models_dir, m.model_path);
  if (!resolved.ok()) {
    ApiError e = from_status(resolved.status(), "path");
    if (resolved.status().code() == ErrorCode::kUnsupported) {
      e.http_status = 403;
      e.type = "permission_error";
    }
    return reply_error(res, e);
  }
  m.model_path = resolved.value();
  if (!m.speculative.draft_model.empty()) {  // the draft model obeys --models-dir too
    auto draft = resolve_model_path(ctx.config.models_dir, m.speculative.draft_model);
    if (!draft.ok()) {
      ApiError e = from_status(draft.status(), "draft_model");
      if (draft.status().code() == ErrorCode::kUnsupported) {
        e.http_status = 403;
        e.type = "permission_error";
      }
      return reply_error(res, e);
    }
    m.speculative.draft_model = draft.value();
  }
  if (Status s = finish_model_config(m); !s.ok()) return reply_error(res, from_status(s));
  auto loaded = ctx.service.load_model(std::move(m));
  if (!loaded.ok()) return reply_error(res, from_status(loaded.status()));
  reply_json(res, model_json(loaded.value()), 201);
}

void unload_model(ServerContext& ctx, const std::string& id, httplib::Response& res) {
  if (id.empty())
    return reply_error(res, invalid_request("'id' is required", "id", "missing_field"));
  Status s = ctx.service.unload_model(id);
  if (!s.ok()) return reply_error(res, from_status(s, "id"));
  reply_json(res, {{"id", id}, {"unloaded", true}});
}

void tokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = parse_admin_body(req.body, body)) return reply_error(res, *e);
  std::string model_id, text;
  if (auto e = optional_string(body, "model", model_id)) return reply_error(res, *e);
  if (!body.contains("text"))
    return reply_error(res, invalid_request("'text' is required", "text", "missing_field"));
  if (auto e = optional_string(body, "text", text)) return reply_error(res, *e);
  bool add_special = true, parse_special = false;
  for (auto [key, out] :
       {std::pair{"add_special", &add_special}, std::pair{"parse_special", &parse_special}}) {
    if (body.contains(key) && !body[key].is_null()) {
      if (!body[key].is_boolean()) {
        return reply_error(res, invalid_request(std::string("'") + key + "' must be a boolean", key,
                                                "invalid_type"));
      }
      *out = body[key].get<bool>();
    }
  }
  ModelDescription model;
  if (auto e = resolve_model(ctx, model_id, model)) return reply_error(res, *e);
  auto tokens =
      ctx.service.tokenize(model.id, text, add_special, special_ranges_for(text, parse_special));
  if (!tokens.ok()) return reply_error(res, from_status(tokens.status(), "text"));
  reply_json(res,
             {{"model", model.id}, {"tokens", tokens.value()}, {"count", tokens.value().size()}});
}

void detokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = parse_admin_body(req.body, body)) return reply_error(res, *e);
  std::string model_id;
  if (auto e = optional_string(body, "model", model_id)) return reply_error(res, *e);
  if (!body.contains("tokens") || !body["tokens"].is_array()) {
    return reply_error(
        res, invalid_request("'tokens' must be an array of token ids", "tokens", "invalid_type"));
  }
  std::vector<TokenId> tokens;
  for (const auto& t : body["tokens"]) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
      return reply_error(res, invalid_request("'tokens' must hold non-negative integers", "tokens",
                                              "invalid_type"));
    }
    tokens.push_back(static_cast<TokenId>(t.get<int64_t>()));
  }
  ModelDescription model;
  if (auto e = resolve_model(ctx, model_id, model)) return reply_error(res, *e);
  auto text = ctx.service.detokenize(model.id, tokens);
  if (!text.ok()) return reply_error(res, from_status(text.status(), "tokens"));
  reply_json(res, {{"model", model.id}, {"text", text.value()}});
}

ApiError cache_error(const Status& s);

void cache_evict(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = parse_admin_body(req.body, body)) return reply_error(res, *e);
  auto valid_tier = [](const std::string& t) {
    return t == "ram" || t == "ram_file" || t == "disk";
  };
  // "tiers": ["ram", "disk"] (empty or absent = all); "tier": "disk" is the one-tier form.
  std::vector<std::string> tiers;
  std::string tier;
  int64_t bytes = 0;
  if (auto e = optional_string(body, "tier", tier)) return reply_error(res, *e);
  if (!tier.empty()) {
    if (!valid_tier(tier))
      return reply_error(res, invalid_request("'tier' must be \"ram\", \"ram_file\" or \"disk\"",
                                              "tier", "invalid_value"));
    tiers.push_back(tier);
  }
  if (body.contains("tiers")) {
    const json& list = body["tiers"];
    if (!list.is_array())
      return reply_error(
          res, invalid_request("'tiers' must be an array of tier names", "tiers", "invalid_type"));
    for (const json& t : list) {
      if (!t.is_string() || !valid_tier(t.get<std::string>()))
        return reply_error(res, invalid_request("'tiers' entries must be \"ram\", \"ram_file\" "
                                                "or \"disk\"",
                                                "tiers", "invalid_value"));
      tiers.push_back(t.get<std::string>());
    }
  }
  if (!body.contains("bytes"))
    return reply_error(res, invalid_request("'bytes' is required", "bytes", "missing_field"));
  if (auto e = optional_int(body, "bytes", bytes)) return reply_error(res, *e);
  if (bytes < 0)
    return reply_error(res, invalid_request("'bytes' must be >= 0", "bytes", "invalid_value"));
  auto freed = ctx.service.cache_evict_bytes(tiers, bytes);
  if (!freed.ok()) return reply_error(res, cache_error(freed.status()));
  reply_json(res, {{"requested_bytes", bytes}, {"freed_bytes", freed.value()}});
}

// POST /hearth/prefill: the spec's prefill_only. The prompt ("prompt": text or token ids,
// or "messages": a chat rendered as for /v1/chat/completions) is prefilled into the KV
// and saved; the reply holds its finish_key for a later request's parent_key. Any other
// field is refused by name: nothing here samples, so no sampling field can be honoured.
void prefill(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = parse_json_object(req.body, body)) return reply_error(res, *e);
  static const std::set<std::string> kFields = {"model", "prompt", "messages", "parent_key",
                                                "lora"};
  for (const auto& [key, value] : body.items()) {
    if (!kFields.count(key))
      return reply_error(res,
                         invalid_request("'" + key +
                                             "' is not a prefill field (model, prompt or messages, "
                                             "parent_key, lora)",
                                         key, "unknown_field"));
  }
  if (body.contains("prompt") == body.contains("messages"))
    return reply_error(res, invalid_request("exactly one of 'prompt' and 'messages' is required",
                                            "prompt", "missing_field"));
  TextRequest tr;
  const bool chat = body.contains("messages");
  if (auto e = chat ? parse_chat_request(body, tr) : parse_completion_request(body, tr))
    return reply_error(res, *e);
  GenerationPlan plan;
  if (auto e = plan_generation(ctx, tr, plan)) return reply_error(res, *e);
  auto done = ctx.service.prefill(plan.request);
  if (!done.ok()) return reply_error(res, cache_error(done.status()));
  const PrefillOutcome& p = done.value();
  RequestLog& log = current_request_log();
  log.model = plan.model.id;
  log.prompt_tokens = p.prompt_tokens;
  log.cached_tokens = p.cached_tokens;
  log.cache_hit_kind = p.cache_hit_kind;
  reply_json(res, {{"model", plan.model.id},
                   {"finish_key", p.finish_key ? json(*p.finish_key) : json(nullptr)},
                   {"cache_hit_kind", p.cache_hit_kind},
                   {"prompt_tokens", p.prompt_tokens},
                   {"cached_tokens", p.cached_tokens},
                   {"committed_tokens", p.committed_tokens}});
}

json pressure_json(const cache::SchedulerStatus& s) {
  json tiers = json::array();
  for (cache::Tier t : s.evict_tiers) tiers.push_back(cache::tier_name(t));
  return {{"enabled", s.enabled},
          {"source", cache::pressure_source_name(s.source)},
          {"interval_ms", s.interval_ms},
          {"high_watermark", s.high_watermark},
          {"low_watermark", s.low_watermark},
          {"min_evict_bytes", s.min_evict_bytes},
          {"evict_tiers", tiers},
          {"last_used", s.last_used},
          {"last_total", s.last_total},
          {"last_evicted_bytes", s.last_evicted_bytes},
          {"last_evicted_at_ms", s.last_evicted_at_ms},
          {"sampled_at_ms", s.sampled_at_ms}};
}

void pressure_reply(ServerContext& ctx, httplib::Response& res) {
  auto st = ctx.service.pressure_status();
  if (!st.ok()) return reply_error(res, cache_error(st.status()));
  reply_json(res, pressure_json(st.value()));
}

// POST /hearth/cache/pressure {"enabled": bool}: the scheduler's enable / disable.
void pressure_set(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = parse_json_object(req.body.empty() ? "{}" : req.body, body))
    return reply_error(res, *e);
  for (const auto& [key, value] : body.items()) {
    if (key != "enabled")
      return reply_error(res, invalid_request("'" + key + "' is not a pressure setting (enabled)",
                                              key, "unknown_field"));
  }
  if (!body.contains("enabled") || !body["enabled"].is_boolean())
    return reply_error(
        res, invalid_request("'enabled' must be true or false", "enabled", "invalid_type"));
  if (Status s = ctx.service.pressure_enable(body["enabled"].get<bool>()); !s.ok())
    return reply_error(res, cache_error(s));
  pressure_reply(ctx, res);
}

void pressure_check(ServerContext& ctx, httplib::Response& res) {
  auto r = ctx.service.pressure_force_check();
  if (!r.ok()) return reply_error(res, cache_error(r.status()));
  reply_json(res, {{"outcome", cache::outcome_name(r->outcome)},
                   {"evicted_rows", r->rows},
                   {"evicted_bytes", r->bytes}});
}

// POST /hearth/models/{id}/evict and /shutdown: the spec's evict(model), shutdown(model).
void model_save(ServerContext& ctx, const std::string& id, bool evict, httplib::Response& res) {
  Status s = evict ? ctx.service.evict_model(id) : ctx.service.shutdown_model(id);
  if (!s.ok()) return reply_error(res, cache_error(s));
  reply_json(res, {{"id", id}, {evict ? "evicted" : "saved", true}});
}

// DELETE /hearth/sessions/{id}[?model=M]: releases the session in model M, or in every
// model holding it; no model holds it: 404 no_session.
void release_session(ServerContext& ctx, const httplib::Request& req, const std::string& id,
                     httplib::Response& res) {
  if (Status s = runtime::check_session_id(id); !s.ok())
    return reply_error(res, from_status(s, "session_id"));
  std::vector<std::string> models;
  if (req.has_param("model")) {
    models.push_back(req.get_param_value("model"));
  } else {
    for (const ModelDescription& m : ctx.service.list_models())
      for (const runtime::SessionInfo& s : m.sessions)
        if (s.id == id) models.push_back(m.id);
    if (models.empty())
      return reply_error(res, from_status(NotFound(std::string(runtime::kNoSession) +
                                                   ": session '" + id + "' is not open")));
  }
  json released = json::array();
  for (const std::string& model : models) {
    Status s = ctx.service.release_session(model, id);
    if (!s.ok()) return reply_error(res, cache_error(s));
    released.push_back(model);
  }
  reply_json(res, {{"id", id}, {"released", true}, {"models", released}});
}

// Cache operations a backend lacks answer 501, not 400: the request was fine.
ApiError cache_error(const Status& s) {
  ApiError e = from_status(s);
  if (s.code() == ErrorCode::kUnsupported) {
    e.http_status = 501;
    e.type = "server_error";
    e.code = "not_implemented";
  }
  return e;
}

}  // namespace

void register_admin_routes(httplib::Server& http, ServerContext& ctx) {
  http.Get("/health", [&ctx](const auto&, auto& res) {
    const bool stopping = ctx.shutting_down.load();
    reply_json(res,
               {{"status", stopping ? "shutting_down" : "ok"},
                {"models", ctx.service.list_models().size()},
                {"node", ctx.node_id}},
               stopping ? 503 : 200);
  });
  http.Get("/metrics", [&ctx](const auto&, auto& res) {
    std::string text = ctx.metrics.render(ctx.service);
    if (ctx.guard != nullptr) {
      const GuardCounters& g = *ctx.guard;
      for (const auto& [name, help, value] :
           {std::tuple{"hearth_connections_shed_total",
                       "connections refused with 503 at limits.max_connections", &g.shed},
            std::tuple{"hearth_connections_idle_closed_total",
                       "connections closed before their first byte (limits.idle_timeout_ms)",
                       &g.idle_closed},
            std::tuple{"hearth_connections_header_timeouts_total",
                       "connections closed with an incomplete request head "
                       "(limits.header_timeout_ms)",
                       &g.header_timeouts},
            std::tuple{"hearth_requests_bad_head_total",
                       "requests refused from their head (framing, size) before routing",
                       &g.bad_heads},
            std::tuple{"hearth_connections_deadline_cuts_total",
                       "body reads or response writes cut at their deadline", &g.deadline_cuts}}) {
        text += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" +
                name + " " + std::to_string(value->load()) + "\n";
      }
    }
    res.set_content(text, "text/plain; version=0.0.4");
  });
  http.Get("/hearth/models", with_metrics(ctx, "/hearth/models", [&ctx](const auto&, auto& res) {
             json data = json::array();
             for (const auto& m : ctx.service.list_models()) data.push_back(model_json(m));
             reply_json(res, {{"models", data}});
           }));
  post_json(http, ctx, "/hearth/models",
            with_metrics(ctx, "/hearth/models",
                         [&ctx](const auto& req, auto& res) { load_model(ctx, req, res); }));
  delete_json(http, ctx, R"(/hearth/models/([^/]+))",
              with_metrics(ctx, "/hearth/models", [&ctx](const auto& req, auto& res) {
                unload_model(ctx, req.matches[1].str(), res);
              }));
  delete_json(http, ctx, "/hearth/models",
              with_metrics(ctx, "/hearth/models", [&ctx](const auto& req, auto& res) {
                json body;
                if (auto e = parse_admin_body(req.body, body)) return reply_error(res, *e);
                std::string id;
                if (auto e = optional_string(body, "id", id)) return reply_error(res, *e);
                unload_model(ctx, id, res);
              }));
  post_json(http, ctx, "/hearth/tokenize",
            with_metrics(ctx, "/hearth/tokenize",
                         [&ctx](const auto& req, auto& res) { tokenize(ctx, req, res); }));
  post_json(http, ctx, "/hearth/detokenize",
            with_metrics(ctx, "/hearth/detokenize",
                         [&ctx](const auto& req, auto& res) { detokenize(ctx, req, res); }));
  http.Get("/hearth/cache/counters",
           with_metrics(ctx, "/hearth/cache/counters", [&ctx](const auto&, auto& res) {
             json counters = json::object();
             for (const auto& [k, v] : ctx.service.cache_counters()) counters[k] = v;
             json tiers = json::array();
             for (const auto& t : ctx.service.tier_usage()) {
               tiers.push_back({{"tier", t.tier},
                                {"bytes", t.bytes},
                                {"rows", t.rows},
                                {"quota_bytes", t.quota_bytes}});
             }
             reply_json(res, {{"counters", counters}, {"tiers", tiers}});
           }));
  http.Get("/hearth/stats", with_metrics(ctx, "/hearth/stats", [&ctx](const auto&, auto& res) {
             reply_json(res, server_stats_json(ctx));
           }));
  http.Get("/hearth/cache/rows",
           with_metrics(ctx, "/hearth/cache/rows", [&ctx](const auto& req, auto& res) {
             int64_t limit = 1000;
             if (req.has_param("limit")) {
               try {
                 limit = std::stoll(req.get_param_value("limit"));
               } catch (...) {
                 return reply_error(
                     res, invalid_request("'limit' must be an integer", "limit", "invalid_type"));
               }
             }
             auto rows = ctx.service.cache_rows_json(limit);
             if (!rows.ok()) return reply_error(res, cache_error(rows.status()));
             json parsed = json::parse(rows.value(), nullptr, false);
             if (parsed.is_discarded()) parsed = json::array();
             reply_json(res, {{"rows", parsed}});
           }));
  post_json(http, ctx, "/hearth/cache/evict",
            with_metrics(ctx, "/hearth/cache/evict",
                         [&ctx](const auto& req, auto& res) { cache_evict(ctx, req, res); }));
  post_json(http, ctx, "/hearth/prefill",
            with_metrics(ctx, "/hearth/prefill",
                         [&ctx](const auto& req, auto& res) { prefill(ctx, req, res); }));
  for (const bool evict : {true, false}) {
    const std::string action = evict ? "evict" : "shutdown";
    post_json(
        http, ctx, "/hearth/models/(.+)/" + action,
        with_metrics(ctx, "/hearth/models/" + action, [&ctx, evict](const auto& req, auto& res) {
          model_save(ctx, req.matches[1].str(), evict, res);
        }));
  }
  http.Get("/hearth/sessions",
           with_metrics(ctx, "/hearth/sessions", [&ctx](const auto&, auto& res) {
             json all = json::array();
             for (const auto& m : ctx.service.list_models())
               for (json& s : sessions_json(m)) all.push_back(std::move(s));
             reply_json(res, {{"sessions", all}});
           }));
  delete_json(http, ctx, R"(/hearth/sessions/([^/]+))",
              with_metrics(ctx, "/hearth/sessions", [&ctx](const auto& req, auto& res) {
                release_session(ctx, req, req.matches[1].str(), res);
              }));
  http.Get("/hearth/cache/pressure",
           with_metrics(ctx, "/hearth/cache/pressure",
                        [&ctx](const auto&, auto& res) { pressure_reply(ctx, res); }));
  post_json(http, ctx, "/hearth/cache/pressure",
            with_metrics(ctx, "/hearth/cache/pressure",
                         [&ctx](const auto& req, auto& res) { pressure_set(ctx, req, res); }));
  post_json(http, ctx, "/hearth/cache/pressure/check",
            with_metrics(ctx, "/hearth/cache/pressure/check",
                         [&ctx](const auto&, auto& res) { pressure_check(ctx, res); }));
  post_json(http, ctx, "/hearth/cache/gc",
            with_metrics(ctx, "/hearth/cache/gc", [&ctx](const auto& req, auto& res) {
              json body;
              if (auto e = parse_admin_body(req.body, body)) return reply_error(res, *e);
              if (!body.empty()) {  // never a silently ignored field
                const std::string key = body.begin().key();
                return reply_error(res, invalid_request("POST /hearth/cache/gc takes no fields; "
                                                        "got '" +
                                                            key + "'",
                                                        key, "unknown_field"));
              }
              auto removed = ctx.service.cache_gc();
              if (!removed.ok()) return reply_error(res, cache_error(removed.status()));
              reply_json(res, {{"removed", removed.value()}});
            }));
}

}  // namespace hearth::server
