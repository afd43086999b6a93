#include "server/lora_routes.h"

#include <climits>
#include <cmath>

#include "server/generation.h"
#include "server/model_path.h"
#include "server/request_parse.h"

namespace hearth::server {
namespace {

using nlohmann::json;

json adapter_json(const runtime::AdapterInfo& a) {
  return {{"id", a.id}, {"path", a.path}, {"scale", a.scale}, {"sha256", a.sha256_hex}};
}

ApiError lora_error(const Status& s, const std::string& param = "") {
  ApiError e = from_status(s, param);
  if (s.code() == ErrorCode::kFailedPrecondition) {
    e.http_status = 409;
    e.code = "adapter_in_use";
  }
  return e;
}

// [{id, scale}]: POST /lora-adapters and POST /hearth/models/{id}/lora/scales.
std::optional<ApiError> parse_scales(const std::string& text,
                                     std::vector<runtime::AdapterScale>& out) {
  json body = json::parse(text.empty() ? "[]" : text, nullptr, false);
  if (body.is_discarded())
    return invalid_request("request body is not valid JSON", "", "invalid_json");
  // The list itself, as llama-server takes it.
  json wrapped = {{"lora", body}};
  TextRequest tr;
  if (auto e = parse_lora_field(wrapped, tr)) return e;
  out = tr.lora.value_or(std::vector<runtime::AdapterScale>{});
  return std::nullopt;
}

void list(ServerContext& ctx, const std::string& model, httplib::Response& res, bool wrap) {
  auto adapters = ctx.service.list_adapters(model);
  if (!adapters.ok()) return reply_error(res, lora_error(adapters.status(), "model"));
  json data = json::array();
  for (const auto& a : adapters.value()) data.push_back(adapter_json(a));
  reply_json(res, wrap ? json{{"model", model}, {"adapters", data}} : data);
}

void set_scales(ServerContext& ctx, const std::string& model, const httplib::Request& req,
                httplib::Response& res) {
  std::vector<runtime::AdapterScale> scales;
  if (auto e = parse_scales(req.body, scales)) return reply_error(res, *e);
  if (Status s = ctx.service.set_adapter_scales(model, scales); !s.ok())
    return reply_error(res, lora_error(s));
  reply_json(res, {{"success", true}});
}

// ?model=ID on llama-server's routes (it serves one model); absent: the first loaded.
std::optional<ApiError> model_param(ServerContext& ctx, const httplib::Request& req,
                                    std::string& id) {
  ModelDescription m;
  if (auto e = resolve_model(ctx, req.has_param("model") ? req.get_param_value("model") : "", m))
    return e;
  id = m.id;
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> adapter_from_json(ServerContext& ctx, const json& value,
                                          const std::string& field, runtime::AdapterSpec& out) {
  const std::string pre = field.empty() ? "" : field + ".";
  if (!value.is_object())
    return invalid_request(
        "'" + (field.empty() ? "body" : field) + "' must be {\"path\", \"scale\"}", field,
        "invalid_type");
  for (const auto& [key, v] : value.items()) {
    if (key != "path" && key != "scale")
      return invalid_request("unknown field '" + pre + key + "' (path, scale)", pre + key,
                             "unknown_field");
  }
  if (!value.contains("path") || !value["path"].is_string())
    return invalid_request("'" + pre + "path' must be a string", pre + "path", "invalid_type");
  out.scale = 1.0f;
  if (value.contains("scale")) {
    if (!value["scale"].is_number() || !std::isfinite(value["scale"].get<double>()))
      return invalid_request("'" + pre + "scale' must be a finite number", pre + "scale",
                             "invalid_type");
    out.scale = static_cast<float>(value["scale"].get<double>());
  }
  auto resolved = resolve_model_path(ctx.config.models_dir, value["path"].get<std::string>());
  if (!resolved.ok()) {
    ApiError e = from_status(resolved.status(), pre + "path");
    if (resolved.status().code() == ErrorCode::kUnsupported) {
      e.http_status = 403;
      e.type = "permission_error";
    }
    return e;
  }
  out.path = resolved.value();
  return std::nullopt;
}

void register_lora_routes(httplib::Server& http, ServerContext& ctx) {
  // llama-server's names.
  http.Get("/lora-adapters",
           with_metrics(ctx, "/lora-adapters", [&ctx](const auto& req, auto& res) {
             std::string model;
             if (auto e = model_param(ctx, req, model)) return reply_error(res, *e);
             list(ctx, model, res, false);
           }));
  post_json(http, ctx, "/lora-adapters",
            with_metrics(ctx, "/lora-adapters", [&ctx](const auto& req, auto& res) {
              std::string model;
              if (auto e = model_param(ctx, req, model)) return reply_error(res, *e);
              set_scales(ctx, model, req, res);
            }));
  // hearth's, per model.
  http.Get(R"(/hearth/models/([^/]+)/lora)",
           with_metrics(ctx, "/hearth/models/lora", [&ctx](const auto& req, auto& res) {
             list(ctx, req.matches[1].str(), res, true);
           }));
  post_json(http, ctx, R"(/hearth/models/([^/]+)/lora)",
            with_metrics(ctx, "/hearth/models/lora", [&ctx](const auto& req, auto& res) {
              json body;
              if (auto e = parse_json_object(req.body, body)) return reply_error(res, *e);
              runtime::AdapterSpec spec;
              if (auto e = adapter_from_json(ctx, body, "", spec)) return reply_error(res, *e);
              auto loaded = ctx.service.load_adapter(req.matches[1].str(), spec);
              if (!loaded.ok()) return reply_error(res, lora_error(loaded.status(), "path"));
              reply_json(res, adapter_json(loaded.value()), 201);
            }));
  post_json(http, ctx, R"(/hearth/models/([^/]+)/lora/scales)",
            with_metrics(ctx, "/hearth/models/lora", [&ctx](const auto& req, auto& res) {
              set_scales(ctx, req.matches[1].str(), req, res);
            }));
  delete_json(http, ctx, R"(/hearth/models/([^/]+)/lora/([0-9]{1,9}))",
              with_metrics(ctx, "/hearth/models/lora", [&ctx](const auto& req, auto& res) {
                const auto id = static_cast<int32_t>(std::stol(req.matches[2].str()));
                if (Status s = ctx.service.unload_adapter(req.matches[1].str(), id); !s.ok())
                  return reply_error(res, lora_error(s, "id"));
                reply_json(res, {{"unloaded", id}});
              }));
}

}  // namespace hearth::server
