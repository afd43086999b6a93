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

// /v1/messages* answers errors in Anthropic's shape, everything else in OpenAI's.
ErrorShape shape_for_path(const std::string& path);

void reply_json(httplib::Response& res, const nlohmann::json& body, int status = 200);
void reply_error(httplib::Response& res, const ApiError& error,
                 ErrorShape shape = ErrorShape::kOpenAi);

// "data: {...}\n\n", with an optional "event: NAME" line before it.
std::string sse_event(const nlohmann::json& data, const std::string& event = "");

// A reply's "finish_key": the key of the row its finish save wrote (send it back as
// parent_key), or null when none was saved.
nlohmann::json finish_key_json(const GenerateStats& stats);
// A reply's "session_id" (the request's sticky session) goes into `body` when it has one.
void add_session_id(nlohmann::json& body, const GenerateRequest& request);

// A random id with a prefix: "chatcmpl-3f9a...".
std::string make_id(const std::string& prefix);
int64_t unix_now();

using RouteHandler = std::function<void(const httplib::Request&, httplib::Response&)>;
// Wraps a handler so its status and latency land in the metrics under `endpoint`
// (streaming responses record when the stream ends, see the route files).
RouteHandler with_metrics(ServerContext& ctx, std::string endpoint, RouteHandler handler);

// True when the request announces a body: a Content-Length above 0, or chunked.
bool request_has_body(const httplib::Request& req);

// Registers a POST (DELETE) route whose body is JSON. The body is read here, not by
// httplib (which buffers chunked and length-less bodies whole): at most
// limits.max_body_bytes after any Content-Encoding is undone (413 beyond), within
// limits.body_timeout_ms of the head (400), and only as "application/json" (415;
// browsers send text/plain cross-origin without a preflight). A request without a
// body reaches `handler` with an empty one.
void post_json(httplib::Server& http, ServerContext& ctx, const std::string& pattern,
               RouteHandler handler);
void delete_json(httplib::Server& http, ServerContext& ctx, const std::string& pattern,
                 RouteHandler handler);
// Refuses, unread, a body sent to a path no route above took (404). Register last.
void register_body_catch_all(httplib::Server& http, ServerContext& ctx);

// Route registration, one file per API family.
void register_openai_routes(httplib::Server& http, ServerContext& ctx);
void register_anthropic_routes(httplib::Server& http, ServerContext& ctx);
void register_responses_routes(httplib::Server& http, ServerContext& ctx);
void register_admin_routes(httplib::Server& http, ServerContext& ctx);
// POST /hearth/verify (server/verify_route.cpp).
void register_verify_route(httplib::Server& http, ServerContext& ctx);

}  // namespace hearth::server

namespace hearth::server {

// Queues the plan's generation with the runtime (its model's queue, the only one), or
// replies with the refusal and returns nullptr: 429 with Retry-After when that queue is
// full, 503 while shutting down, 400 for a request the runtime refuses.
std::shared_ptr<Generation> submit_generation(ServerContext& ctx, const GenerationPlan& plan,
                                              httplib::Response& res, ErrorShape shape);

// Starts a Server-Sent Events reply whose body is produced by `produce` on the
// connection's thread after the handler returns. `produce` writes events through
// the write function it gets, which returns false once the client is gone.
using SseProducer = std::function<void(const std::function<bool(const std::string&)>& write)>;
void start_sse(httplib::Response& res, ServerContext& ctx, std::string endpoint,
               SseProducer produce);

// The emit function of a non-streaming generation: nothing is written until the end,
// so it watches the connection instead and returns false (cancelling the generation)
// once the client has closed or reset it. cpp-httplib 0.11 does not give handlers
// their socket, so it is found once by the request's address pair; when it cannot be
// found the generation simply runs to its end.
std::function<bool(const std::string&)> watch_connection(const httplib::Request& req);

// Status recorded for a request whose client left before the reply (nginx's 499).
constexpr int kClientClosedRequest = 499;

}  // namespace hearth::server
