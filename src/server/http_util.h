// Small helpers shared by the route files: JSON and error replies, SSE framing,
// ids, and a wrapper that records each request in the metrics.
#pragma once

#include <httplib.h>

#include <string>

#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "server/api_error.h"
#include "server/generation.h"

namespace hearth::server {

enum class ErrorShape { kOpenAi, kAnthropic };

void reply_json(httplib::Response& res, const nlohmann::json& body, int status = 200);
void reply_error(httplib::Response& res, const ApiError& error,
                 ErrorShape shape = ErrorShape::kOpenAi);

// "data: {...}\n\n", with an optional "event: NAME" line before it.
std::string sse_event(const nlohmann::json& data, const std::string& event = "");

// A random id with a prefix: "chatcmpl-3f9a...".
std::string make_id(const std::string& prefix);
int64_t unix_now();

using RouteHandler = std::function<void(const httplib::Request&, httplib::Response&)>;
// Wraps a handler so its status and latency land in the metrics under `endpoint`
// (streaming responses record when the stream ends, see the route files).
RouteHandler with_metrics(ServerContext& ctx, std::string endpoint, RouteHandler handler);

// Route registration, one file per API family.
void register_openai_routes(httplib::Server& http, ServerContext& ctx);
void register_anthropic_routes(httplib::Server& http, ServerContext& ctx);
void register_admin_routes(httplib::Server& http, ServerContext& ctx);

}  // namespace hearth::server

namespace hearth::server {

// Takes a generation slot or answers 429 with Retry-After (nullptr then).
std::shared_ptr<Admission::Ticket> admit(ServerContext& ctx, httplib::Response& res,
                                         ErrorShape shape);

// Starts a Server-Sent Events reply whose body is produced by `produce` on the
// connection's thread after the handler returns. `produce` writes events through
// the write function it gets, which returns false once the client is gone.
using SseProducer = std::function<void(const std::function<bool(const std::string&)>& write)>;
void start_sse(httplib::Response& res, ServerContext& ctx, std::string endpoint,
               std::shared_ptr<Admission::Ticket> ticket, SseProducer produce);

// The emit function of a non-streaming generation: nothing is written until the end,
// so it watches the connection instead and returns false (cancelling the generation)
// once the client has closed or reset it. cpp-httplib 0.11 does not give handlers
// their socket, so it is found once by the request's address pair; when it cannot be
// found the generation simply runs to its end.
std::function<bool(const std::string&)> watch_connection(const httplib::Request& req);

// Status recorded for a request whose client left before the reply (nginx's 499).
constexpr int kClientClosedRequest = 499;

}  // namespace hearth::server
