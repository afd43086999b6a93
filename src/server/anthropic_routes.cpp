// Anthropic-compatible /v1/messages (and /v1/messages/count_tokens), so the
// official @anthropic-ai/sdk works against hearth. Errors use Anthropic's shape.
#include "server/http_util.h"

namespace hearth::server {
namespace {

using nlohmann::json;

std::string stop_reason(const GenerationOutcome& out) {
  if (!out.matched_stop.empty()) return "stop_sequence";
  return out.finish_reason == "length" ? "max_tokens" : "end_turn";
}

json usage_json(const GenerateStats& s, bool with_output = true) {
  json u = {{"input_tokens", s.prompt_tokens - s.cached_tokens},
            {"cache_creation_input_tokens", 0},
            {"cache_read_input_tokens", s.cached_tokens}};
  if (with_output) u["output_tokens"] = s.completion_tokens;
  return u;
}

void handle_messages(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = parse_json_object(req.body, body))
    return reply_error(res, *e, ErrorShape::kAnthropic);
  TextRequest tr;
  if (auto e = parse_messages_request(body, tr))
    return reply_error(res, *e, ErrorShape::kAnthropic);
  auto plan = std::make_shared<GenerationPlan>();
  if (auto e = plan_generation(ctx, tr, *plan)) return reply_error(res, *e, ErrorShape::kAnthropic);
  std::shared_ptr<Generation> generation =
      submit_generation(ctx, *plan, res, ErrorShape::kAnthropic);
  if (!generation) return;
  const std::string id = make_id("msg_");

  if (!tr.stream) {
    GenerationOutcome out = run_generation(ctx, *plan, *generation, watch_connection(req));
    if (out.client_gone) {
      res.status = kClientClosedRequest;  // nobody reads the reply; the metrics do
      return;
    }
    if (!out.error.ok()) return reply_error(res, from_status(out.error), ErrorShape::kAnthropic);
    return reply_json(
        res, {{"id", id},
              {"type", "message"},
              {"role", "assistant"},
              {"model", plan->model.id},
              {"content", json::array({{{"type", "text"}, {"text", out.text}}})},
              {"stop_reason", stop_reason(out)},
              {"stop_sequence", out.matched_stop.empty() ? json(nullptr) : json(out.matched_stop)},
              {"usage", usage_json(out.stats)},
              {"finish_key", finish_key_json(out.stats)}});
  }

  start_sse(
      res, ctx, "/v1/messages",
      [&ctx, plan, generation, id](const std::function<bool(const std::string&)>& write) {
        // Prompt-side usage is final only when the generation ends; message_start
        // carries the prompt size, message_delta the full usage.
        GenerateStats before;
        before.prompt_tokens = static_cast<int64_t>(plan->request.prompt.size());
        json start = {{"type", "message_start"},
                      {"message",
                       {{"id", id},
                        {"type", "message"},
                        {"role", "assistant"},
                        {"model", plan->model.id},
                        {"content", json::array()},
                        {"stop_reason", nullptr},
                        {"stop_sequence", nullptr},
                        {"usage", usage_json(before)}}}};
        if (!write(sse_event(start, "message_start"))) return;
        json block_start = {{"type", "content_block_start"},
                            {"index", 0},
                            {"content_block", {{"type", "text"}, {"text", ""}}}};
        if (!write(sse_event(block_start, "content_block_start"))) return;
        GenerationOutcome out =
            run_generation(ctx, *plan, *generation, [&](const std::string& text) {
              json delta = {{"type", "content_block_delta"},
                            {"index", 0},
                            {"delta", {{"type", "text_delta"}, {"text", text}}}};
              return write(sse_event(delta, "content_block_delta"));
            });
        if (out.client_gone) return;
        if (!out.error.ok()) {
          write(sse_event(json::parse(anthropic_error_body(from_status(out.error))), "error"));
          return;
        }
        if (!write(sse_event({{"type", "content_block_stop"}, {"index", 0}}, "content_block_stop")))
          return;
        json delta = {{"type", "message_delta"},
                      {"delta",
                       {{"stop_reason", stop_reason(out)},
                        {"stop_sequence",
                         out.matched_stop.empty() ? json(nullptr) : json(out.matched_stop)}}},
                      {"usage", usage_json(out.stats)},
                      {"finish_key", finish_key_json(out.stats)}};
        if (!write(sse_event(delta, "message_delta"))) return;
        write(sse_event({{"type", "message_stop"}}, "message_stop"));
      });
}

void handle_count_tokens(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = parse_json_object(req.body, body))
    return reply_error(res, *e, ErrorShape::kAnthropic);
  if (!body.contains("max_tokens")) body["max_tokens"] = 1;
  TextRequest tr;
  if (auto e = parse_messages_request(body, tr))
    return reply_error(res, *e, ErrorShape::kAnthropic);
  tr.max_tokens = 1;
  GenerationPlan plan;
  if (auto e = plan_generation(ctx, tr, plan)) return reply_error(res, *e, ErrorShape::kAnthropic);
  reply_json(res, {{"input_tokens", plan.request.prompt.size()}});
}

}  // namespace

void register_anthropic_routes(httplib::Server& http, ServerContext& ctx) {
  post_json(http, ctx, "/v1/messages",
            with_metrics(ctx, "/v1/messages",
                         [&ctx](const auto& req, auto& res) { handle_messages(ctx, req, res); }));
  post_json(http, ctx, "/v1/messages/count_tokens",
            with_metrics(ctx, "/v1/messages/count_tokens", [&ctx](const auto& req, auto& res) {
              handle_count_tokens(ctx, req, res);
            }));
}

}  // namespace hearth::server
