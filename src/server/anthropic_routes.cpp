// Anthropic-compatible /v1/messages (and /v1/messages/count_tokens), so the
// official @anthropic-ai/sdk works against hearth. Errors use Anthropic's shape.
#include "server/chat_reply.h"
#include "server/http_util.h"
#include "server/tool_request.h"

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
  keep_tool_key_order(req.body, /*anthropic=*/true, tr);
  if (auto e = session_header(req.get_header_value("X-Session-Id"), tr))
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
    const ParsedOutput parsed =
        parse_output(plan->output, out.text, [] { return make_id("toolu_"); });
    json reply = {
        {"id", id},
        {"type", "message"},
        {"role", "assistant"},
        {"model", plan->model.id},
        {"content", anthropic_content(parsed)},
        {"stop_reason",
         anthropic_stop_reason(stop_reason(out), static_cast<int32_t>(parsed.calls.size()))},
        {"stop_sequence", out.matched_stop.empty() ? json(nullptr) : json(out.matched_stop)},
        {"usage", usage_json(out.stats)},
        {"finish_key", finish_key_json(out.stats)}};
    add_session_id(reply, plan->request);
    return reply_json(res, reply);
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
        OutputParser parser(plan->output, [] { return make_id("toolu_"); });
        AnthropicBlockStream blocks;
        auto send = [&](const AnthropicBlockStream::Events& events) {
          for (const auto& [name, data] : events)
            if (!write(sse_event(data, name))) return false;
          return true;
        };
        auto send_deltas = [&](const std::vector<OutputDelta>& deltas) {
          for (const OutputDelta& d : deltas)
            if (!send(blocks.on_delta(d))) return false;
          return true;
        };
        GenerationOutcome out =
            run_generation(ctx, *plan, *generation,
                           [&](const std::string& text) { return send_deltas(parser.push(text)); });
        if (out.client_gone) return;
        if (!out.error.ok()) {
          write(sse_event(json::parse(anthropic_error_body(from_status(out.error))), "error"));
          return;
        }
        if (!send_deltas(parser.finish()) || !send(blocks.finish())) return;
        json delta = {
            {"type", "message_delta"},
            {"delta",
             {{"stop_reason", anthropic_stop_reason(stop_reason(out), parser.tool_call_count())},
              {"stop_sequence",
               out.matched_stop.empty() ? json(nullptr) : json(out.matched_stop)}}},
            {"usage", usage_json(out.stats)},
            {"finish_key", finish_key_json(out.stats)}};
        add_session_id(delta, plan->request);
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
  keep_tool_key_order(req.body, /*anthropic=*/true, tr);
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
