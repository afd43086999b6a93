// POST /hearth/verify: the spec's verify(model, Prefix, Draft, K) over HTTP (docs/api.md).
#include <nlohmann/json.hpp>

#include "server/generation.h"
#include "server/http_util.h"
#include "server/request_parse.h"

namespace hearth::server {
namespace {

using nlohmann::json;

// The prefix is "prompt" (text or token ids) or "messages" (a chat rendered as for
// /v1/chat/completions); "draft" the candidate token ids; "k" (default: all of them) how
// many of the draft to score. Any other field is refused by name.
void verify(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = parse_json_object(req.body, body)) return reply_error(res, *e);
  for (const auto& [key, value] : body.items()) {
    if (key != "model" && key != "prompt" && key != "messages" && key != "draft" && key != "k")
      return reply_error(res, invalid_request("'" + key +
                                                  "' is not a verify field (model, prompt or "
                                                  "messages, draft, k)",
                                              key, "unknown_field"));
  }
  if (body.contains("prompt") == body.contains("messages"))
    return reply_error(res, invalid_request("exactly one of 'prompt' and 'messages' is required",
                                            "prompt", "missing_field"));
  if (!body.contains("draft") || !body["draft"].is_array())
    return reply_error(res,
                       invalid_request("'draft' is required: an array of token ids", "draft",
                                       body.contains("draft") ? "invalid_type" : "missing_field"));
  std::vector<TokenId> draft;
  for (const json& t : body["draft"]) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX)
      return reply_error(res, invalid_request("'draft' must hold token ids (integers >= 0)",
                                              "draft", "invalid_type"));
    draft.push_back(static_cast<TokenId>(t.get<int64_t>()));
  }
  int64_t k = static_cast<int64_t>(std::max<size_t>(draft.size(), 1));
  if (body.contains("k")) {
    if (!body["k"].is_number_integer() || body["k"].get<int64_t>() < 1 ||
        body["k"].get<int64_t>() > INT32_MAX)
      return reply_error(res, invalid_request("'k' must be an integer >= 1", "k", "invalid_value"));
    k = body["k"].get<int64_t>();
  }
  body.erase("draft");
  body.erase("k");
  TextRequest tr;
  const bool chat = body.contains("messages");
  if (auto e = chat ? parse_chat_request(body, tr) : parse_completion_request(body, tr))
    return reply_error(res, *e);
  GenerationPlan plan;
  if (auto e = plan_generation(ctx, tr, plan)) return reply_error(res, *e);
  auto v = ctx.service.verify(plan.request, draft, static_cast<int32_t>(k));
  if (!v.ok()) {
    ApiError e = from_status(v.status());
    if (v.status().code() == ErrorCode::kFailedPrecondition) {
      e.http_status = 409;  // the spec's {error, busy}
      e.code = "busy";
    } else if (v.status().code() == ErrorCode::kUnsupported) {
      e.http_status = 501;
    }
    return reply_error(res, e);
  }
  reply_json(res, {{"model", plan.model.id},
                   {"accepted", v->accepted},
                   {"next", v->next},
                   {"eos", v->eos},
                   {"prompt_tokens", plan.request.prompt.size()},
                   {"draft_tokens", std::min<int64_t>(k, static_cast<int64_t>(draft.size()))}});
}

}  // namespace

void register_verify_route(httplib::Server& http, ServerContext& ctx) {
  post_json(http, ctx, "/hearth/verify",
            with_metrics(ctx, "/hearth/verify",
                         [&ctx](const auto& req, auto& res) { verify(ctx, req, res); }));
}

}  // namespace hearth::server
