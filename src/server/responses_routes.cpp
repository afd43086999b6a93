// OpenAI's Responses API: POST /v1/responses (whole or streamed as typed events),
// GET and DELETE /v1/responses/{id}. A request runs on the chat path (plan_generation,
// the output parser, tools, grammar, reasoning split); server/responses/ holds the
// request translation, the output items and the store that previous_response_id reads.
#include <utility>

#include "server/http_util.h"
#include "server/responses/response_items.h"
#include "server/responses/responses_request.h"

namespace hearth::server {
namespace {

using nlohmann::json;

json usage_json(const GenerateStats& s) {
  return {{"input_tokens", s.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", s.cached_tokens}}},
          {"output_tokens", s.completion_tokens},
          {"total_tokens", s.prompt_tokens + s.completion_tokens},
          // hearth's extension, as on the other endpoints: how the prompt met the KV cache.
          {"hearth", {{"cache_hit", s.cache_hit_kind}}}};
}

ApiError not_found(const std::string& id, const std::string& param, const std::string& code) {
  ApiError e = invalid_request(
      "response '" + id +
          "' is not stored (unknown, deleted, or evicted: " + "the store keeps the " +
          std::to_string(ResponseStore::kDefaultCapacity) + " most recently used)",
      param, code);
  e.http_status = 404;
  return e;
}

// The response object around its output: the request's echoed fields, the status and,
// once the generation ended, usage and finish_key.
struct ResponseShell {
  std::string id;
  int64_t created_at = 0;
  std::string model;
  json echo;

  json object(const std::string& status, const json& output) const {
    json r = {{"id", id},         {"object", "response"}, {"created_at", created_at},
              {"status", status}, {"error", nullptr},     {"incomplete_details", nullptr},
              {"model", model},   {"output", output},     {"usage", nullptr}};
    for (const auto& [k, v] : echo.items()) r[k] = v;
    return r;
  }
  json finished(const ResponseItems& items, const GenerationOutcome& out) const {
    const bool incomplete = out.finish_reason == "length";
    json r = object(incomplete ? "incomplete" : "completed", items.output());
    if (incomplete) r["incomplete_details"] = {{"reason", "max_output_tokens"}};
    r["output_text"] = items.output_text();
    r["usage"] = usage_json(out.stats);
    r["finish_key"] = finish_key_json(out.stats);
    return r;
  }
};

// Keeps a finished response and its conversation for previous_response_id.
void store_response(ServerContext& ctx, const ResponsesRequest& rr,
                    std::vector<ChatMessage> conversation, const ResponseItems& items,
                    const json& response) {
  if (!rr.store) return;
  conversation.push_back(items.assistant_message());
  ctx.responses.put(response["id"].get<std::string>(), {response, std::move(conversation)});
}

// Input items {"type": "item_reference", "id"} become the stored output item they name
// (the AI SDK sends them for earlier turns when responses are stored).
std::optional<ApiError> resolve_item_references(ServerContext& ctx, json& body) {
  auto input = body.find("input");
  if (input == body.end() || !input->is_array()) return std::nullopt;
  for (size_t i = 0; i < input->size(); ++i) {
    json& item = (*input)[i];
    if (!item.is_object() || item.value("type", "") != "item_reference") continue;
    const std::string field = "input[" + std::to_string(i) + "].id";
    if (!item.contains("id") || !item["id"].is_string())
      return invalid_request("'" + field + "' must be a string", field, "invalid_type");
    json stored = ctx.responses.item(item["id"].get<std::string>());
    if (stored.is_null())
      return invalid_request("'" + field + "' names item '" + item["id"].get<std::string>() +
                                 "', which no stored response holds",
                             field, "item_not_found");
    item = std::move(stored);
  }
  return std::nullopt;
}

void handle_create(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = parse_json_object(req.body, body)) return reply_error(res, *e);
  if (auto e = resolve_item_references(ctx, body)) return reply_error(res, *e);
  auto rr = std::make_shared<ResponsesRequest>();
  if (auto e = parse_responses_request(body, req.body, *rr)) return reply_error(res, *e);
  // The conversation so far: the previous response's (its inputs and outputs), then ours.
  std::vector<ChatMessage> conversation;
  if (rr->previous_response_id) {
    auto prev = ctx.responses.get(*rr->previous_response_id);
    if (!prev)
      return reply_error(res, not_found(*rr->previous_response_id, "previous_response_id",
                                        "previous_response_not_found"));
    conversation = prev->conversation;
  }
  conversation.insert(conversation.end(), rr->input.begin(), rr->input.end());
  name_tool_results(conversation);
  TextRequest& tr = rr->text;
  if (rr->instructions) tr.messages.emplace_back("system", *rr->instructions);
  tr.messages.insert(tr.messages.end(), conversation.begin(), conversation.end());

  auto plan = std::make_shared<GenerationPlan>();
  if (auto e = plan_generation(ctx, tr, *plan)) return reply_error(res, responses_field_names(*e));
  std::shared_ptr<Generation> generation = submit_generation(ctx, *plan, res, ErrorShape::kOpenAi);
  if (!generation) return;
  auto shell = std::make_shared<ResponseShell>(
      ResponseShell{make_id("resp_"), unix_now(), plan->model.id, rr->echo});

  if (!tr.stream) {
    GenerationOutcome out = run_generation(ctx, *plan, *generation, watch_connection(req));
    if (out.client_gone) {
      res.status = kClientClosedRequest;  // nobody reads the reply; the metrics do
      return;
    }
    if (!out.error.ok()) return reply_error(res, from_status(out.error));
    const ResponseItems items =
        collect_items(plan->output, out.text, out.finish_reason == "length");
    const json response = shell->finished(items, out);
    store_response(ctx, *rr, std::move(conversation), items, response);
    return reply_json(res, response);
  }

  start_sse(res, ctx, "/v1/responses",
            [&ctx, plan, generation, rr, shell, conversation = std::move(conversation)](
                const std::function<bool(const std::string&)>& write) mutable {
              int64_t sequence = 0;
              auto send = [&](json event) {
                event["sequence_number"] = sequence++;
                const std::string type = event["type"];
                return write(sse_event(event, type));
              };
              auto send_all = [&](const ResponseItems::Events& events) {
                for (const json& e : events)
                  if (!send(e)) return false;
                return true;
              };
              const json start = shell->object("in_progress", json::array());
              if (!send({{"type", "response.created"}, {"response", start}}) ||
                  !send({{"type", "response.in_progress"}, {"response", start}}))
                return;
              OutputParser parser(plan->output, [] { return make_id("call_"); });
              ResponseItems items;
              auto send_deltas = [&](const std::vector<OutputDelta>& deltas) {
                for (const OutputDelta& d : deltas)
                  if (!send_all(items.on_delta(d))) return false;
                return true;
              };
              GenerationOutcome out = run_generation(
                  ctx, *plan, *generation,
                  [&](const std::string& text) { return send_deltas(parser.push(text)); });
              if (out.client_gone) return;
              if (!out.error.ok()) {
                const ApiError e = from_status(out.error);
                json failed = shell->object("failed", items.output());
                failed["error"] = {{"code", e.code.empty() ? "server_error" : e.code},
                                   {"message", e.message}};
                send({{"type", "response.failed"}, {"response", failed}});
                return;
              }
              const bool incomplete = out.finish_reason == "length";
              if (!send_deltas(parser.finish()) || !send_all(items.finish(incomplete))) return;
              const json response = shell->finished(items, out);
              store_response(ctx, *rr, std::move(conversation), items, response);
              send({{"type", incomplete ? "response.incomplete" : "response.completed"},
                    {"response", response}});
            });
}

// GET takes no query parameters (include / stream / starting_after are not offered).
std::optional<ApiError> refuse_query(const httplib::Request& req) {
  if (req.params.empty()) return std::nullopt;
  const std::string name = req.params.begin()->first;
  return invalid_request("query parameter '" + name + "' is not supported", name,
                         "unsupported_field");
}

}  // namespace

void register_responses_routes(httplib::Server& http, ServerContext& ctx) {
  post_json(http, ctx, "/v1/responses",
            with_metrics(ctx, "/v1/responses",
                         [&ctx](const auto& req, auto& res) { handle_create(ctx, req, res); }));
  http.Get(R"(/v1/responses/([^/]+))",
           with_metrics(ctx, "/v1/responses/{id}", [&ctx](const auto& req, auto& res) {
             if (auto e = refuse_query(req)) return reply_error(res, *e);
             const std::string id = req.matches[1].str();
             auto stored = ctx.responses.get(id);
             if (!stored) return reply_error(res, not_found(id, "response_id", "not_found"));
             reply_json(res, stored->response);
           }));
  delete_json(http, ctx, R"(/v1/responses/([^/]+))",
              with_metrics(ctx, "/v1/responses/{id}", [&ctx](const auto& req, auto& res) {
                const std::string id = req.matches[1].str();
                if (!ctx.responses.erase(id))
                  return reply_error(res, not_found(id, "response_id", "not_found"));
                reply_json(res, {{"id", id}, {"object", "response.deleted"}, {"deleted", true}});
              }));
}

}  // namespace hearth::server
