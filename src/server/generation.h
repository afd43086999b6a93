// The path every text endpoint shares: resolve the model, render the chat
// template, tokenize, enforce context and token limits (a clear error, never a
// silent truncation), then run the generation with stop strings applied and
// metrics recorded. Independent of HTTP.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "hearth/server/server.h"
#include "server/api_error.h"
#include "server/metrics.h"
#include "server/output/output_parser.h"
#include "server/output/tool_grammar.h"
#include "server/request_parse.h"
#include "server/responses/response_store.h"
#include "server/service_api.h"

namespace hearth::server {

// State shared by all request handlers of one server.
struct GuardCounters;

struct ServerContext {
  ServerContext(ServiceApi& s, const ServerConfig& c) : service(s), config(c) {}

  ServiceApi& service;
  const ServerConfig& config;
  Metrics metrics;
  // Set on SIGTERM/SIGINT: generations still running after the grace deadline stop.
  std::atomic<bool> shutting_down{false};
  std::atomic<int64_t> shutdown_deadline_ms{0};  // steady-clock ms
  // The connection layer's counters, for /metrics (set by HttpServer; may be null).
  const GuardCounters* guard = nullptr;
  // The X-Hearth-Node value of every reply: config.node_id, else "HOSTNAME:PORT" (set by
  // HttpServer::bind, before the first request).
  std::string node_id;

  // POST /v1/responses' stored responses (store: true), for previous_response_id and
  // GET / DELETE /v1/responses/{id}.
  ResponseStore responses;

  std::mutex warned_mu;
  std::set<std::string> warned_template_models;  // fallback warning logged once per model
};

struct GenerationPlan {
  ModelDescription model;
  GenerateRequest request;
  std::string chat_family;  // empty for plain completions
  // How the reply is parsed into content, reasoning and tool calls (chat only).
  OutputSyntax output;
  // What a grammar must enforce for the request's tools and tool_choice (nullopt: none).
  // Not applied yet: the grammar-constrained sampler puts it on SamplingOptions.
  std::optional<ToolGrammarSpec> tool_grammar;
};

// Resolves the model. Empty id = the first loaded model.
std::optional<ApiError> resolve_model(ServerContext& ctx, const std::string& id,
                                      ModelDescription& out);

std::optional<ApiError> plan_generation(ServerContext& ctx, const TextRequest& req,
                                        GenerationPlan& plan);

// The request served on this thread, for its one log line: http_util's with_metrics
// and start_sse open it when the request starts and log it when it ends; a generation
// adds what it did (run_generation).
struct RequestLog {
  std::string id;  // also sent as the X-Request-Id reply header
  int64_t start_ms = 0;
  std::string model;
  int64_t prompt_tokens = -1;  // -1: not a generation
  int64_t cached_tokens = 0;
  int64_t completion_tokens = 0;
  std::string cache_hit_kind;
  std::string finish_reason;
  double ttft_ms = -1;
};
RequestLog& current_request_log();
// Opens the record of a new request and returns it.
RequestLog& begin_request_log(std::string id);
// One line: route, status, the generation's fields when there was one, total time.
void log_request(const std::string& route, int status);

// One choice of a generation, as the client receives it.
struct ChoiceOutcome {
  std::string text;           // everything emitted for this choice
  std::string finish_reason;  // "stop" or "length"
  std::string matched_stop;   // the stop string that ended it, if any
  std::vector<TokenId> tokens;
  std::vector<TokenLogprobs> logprobs;  // one per token when the request asked for them
};

struct GenerationOutcome {
  GenerateStats stats;
  std::string text;                    // choice 0: everything emitted to the client
  std::string finish_reason;           // choice 0: "stop" or "length"
  std::string matched_stop;            // choice 0: the stop string that ended it, if any
  std::vector<ChoiceOutcome> choices;  // GenerateRequest::n of them, in index order
  bool client_gone = false;
  Status error;
  double ttft_seconds = -1;
  // Time between consecutive generated tokens (a piece of k tokens after a gap of g
  // seconds counts k gaps of g / k); the first token's wait is ttft_seconds.
  std::vector<double> inter_token_seconds;
};

// Runs a generation the service accepted for the plan. emit(text) returns false once
// the client is gone, which cancels the generation. This form passes choice 0's text.
GenerationOutcome run_generation(ServerContext& ctx, const GenerationPlan& plan,
                                 Generation& generation,
                                 const std::function<bool(const std::string&)>& emit);
// The same with every piece of every choice: emit gets each piece that carries text or
// logprobs (a piece of held-back tokens with neither is not emitted).
using PieceEmitter = std::function<bool(const GeneratedPiece&)>;
GenerationOutcome run_generation_pieces(ServerContext& ctx, const GenerationPlan& plan,
                                        Generation& generation, const PieceEmitter& emit);

int64_t steady_now_ms();

}  // namespace hearth::server
