// Validates OpenAI (/v1/completions, /v1/chat/completions) and Anthropic
// (/v1/messages) request bodies into one neutral form. Every rejection names
// the offending field, so clients can fix the request from the message alone.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/chat_template.h"
#include "server/output/tool_spec.h"
#include "server/service_api.h"

namespace hearth::server {

struct TextRequest {
  std::string model;  // empty = the default (first loaded) model
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool is_chat = false;
  std::string prompt;                                 // completions: prompt text
  std::optional<std::vector<TokenId>> prompt_tokens;  // completions: pre-tokenized prompt
  std::vector<ChatMessage> messages;                  // chat / messages
  std::optional<int64_t> max_tokens;                  // nullopt = fill the context (capped)
  SamplingOptions sampling;
  std::vector<std::string> stop;
  std::string prompt_field = "prompt";  // which field the prompt came from (for errors)
  // Cache control (parse_cache_fields): parent_key, cache_prompt.
  std::optional<std::string> parent_key;
  bool cache_prompt = true;
  // Sticky session (parse_cache_fields, then the X-Session-Id header: session_header).
  std::optional<std::string> session_id;
  // Speculative decoding (llama-server's "speculative.n_max" / "n_min" / "p_min", and
  // "speculative.type"): unset fields take the model's defaults.
  runtime::RequestParams::Speculative speculative;
  // llama-server's `lora`: [{id, scale}] for this request (unlisted adapters: scale 0);
  // unset: the model's current scales (parse_lora_field).
  std::optional<std::vector<runtime::AdapterScale>> lora;
  int32_t n = 1;  // OpenAI n: choices
  // -1: no logprobs; else each token's logprob and this many top alternatives (chat:
  // logprobs true + top_logprobs; completions: logprobs N).
  int32_t logprobs = -1;
  bool echo = false;  // completions: the prompt text comes before the output
  // Tool calling (server/tool_request.h): the declared functions, as the caller wrote
  // them for the template ({type: function, function: {...}}) and parsed.
  nlohmann::ordered_json tools_json = nlohmann::ordered_json::array();
  std::vector<ToolSpec> tools;
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;
  // Extra template variables: chat_template_kwargs, enable_thinking, Anthropic thinking.
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();
  std::optional<int64_t> thinking_budget;  // tokens inside the think block, then closed
};

// Upper bounds hearth accepts (OpenAI's are 128 choices, 20 chat top_logprobs and 5
// completions logprobs; hearth allows 20 for both, the runtime's kMaxTopLogprobs).
inline constexpr int64_t kMaxChoices = 128;

// True when `body` has `key` with a value other than null (null means "not given").
bool present(const nlohmann::json& body, const char* key);

std::optional<ApiError> parse_completion_request(const nlohmann::json& body, TextRequest& out);
std::optional<ApiError> parse_chat_request(const nlohmann::json& body, TextRequest& out);
std::optional<ApiError> parse_messages_request(const nlohmann::json& body, TextRequest& out);

// The fields every text endpoint shares (model, stream, sampling, max_tokens, stop and,
// for OpenAI, n, logit_bias, stream_options; then the cache fields). The endpoint's
// field table runs first, so a field it does not know never reaches here.
std::optional<ApiError> parse_common_fields(const nlohmann::json& body, TextRequest& out,
                                            bool openai);

// Cache control, on every text endpoint and POST /hearth/prefill: "parent_key" (the
// finish_key of an earlier reply: 64 hex digits) and "cache_prompt" (a boolean; false = no
// cache lookup and no save for this request, as llama-server's field).
std::optional<ApiError> parse_cache_fields(const nlohmann::json& body, TextRequest& out);
// "lora": an array of {"id": integer, "scale": number} (llama-server's request field);
// errors name lora[i].id / lora[i].scale.
std::optional<ApiError> parse_lora_field(const nlohmann::json& body, TextRequest& out);

// The X-Session-Id header (`header`, empty when absent) joins the body's session_id: it
// sets it when the body has none; a body value that differs is a 400 naming session_id.
std::optional<ApiError> session_header(const std::string& header, TextRequest& out);

// The body must be a JSON object; returns the error for anything else.
std::optional<ApiError> parse_json_object(const std::string& body, nlohmann::json& out);

}  // namespace hearth::server
