#include "server/request_fields.h"

#include <string>
#include <string_view>

namespace hearth::server {
namespace {

constexpr unsigned kOpenAiText = kCompletionsApi | kChatApi;
constexpr unsigned kText = kOpenAiText | kMessagesApi;
constexpr unsigned kAll = kText | kEmbeddingsApi | kResponsesApi;
constexpr unsigned kResp = kResponsesApi;

// Every field a request may carry: a new request feature adds its row here.
constexpr RequestField kFields[] = {
    // ---- shared
    {"model", kAll, FieldUse::kHonoured, ""},
    {"stream", kText | kResp, FieldUse::kHonoured, ""},
    {"temperature", kText | kResp, FieldUse::kHonoured, ""},
    {"top_p", kText | kResp, FieldUse::kHonoured, ""},
    {"top_k", kText | kResp, FieldUse::kHonoured, ""},
    {"max_tokens", kText, FieldUse::kHonoured, ""},
    {"seed", kText | kResp, FieldUse::kHonoured, ""},
    // ---- OpenAI text endpoints
    {"prompt", kCompletionsApi, FieldUse::kHonoured, ""},
    {"messages", kChatApi | kMessagesApi, FieldUse::kHonoured, ""},
    {"max_completion_tokens", kOpenAiText, FieldUse::kHonoured, ""},
    {"stop", kOpenAiText, FieldUse::kHonoured, ""},
    {"stream_options", kOpenAiText, FieldUse::kHonoured, ""},
    {"n", kOpenAiText, FieldUse::kHonoured, ""},
    {"logprobs", kOpenAiText, FieldUse::kHonoured, ""},
    {"top_logprobs", kChatApi, FieldUse::kHonoured, ""},
    {"logit_bias", kOpenAiText, FieldUse::kHonoured, ""},
    {"frequency_penalty", kOpenAiText, FieldUse::kHonoured, ""},
    {"presence_penalty", kOpenAiText, FieldUse::kHonoured, ""},
    {"echo", kCompletionsApi, FieldUse::kHonoured, ""},
    {"best_of", kCompletionsApi, FieldUse::kHonoured, ""},      // 1 or n only
    {"modalities", kChatApi, FieldUse::kHonoured, ""},          // ["text"] only
    {"response_format", kOpenAiText, FieldUse::kHonoured, ""},  // text, json_object, json_schema
    {"grammar", kOpenAiText, FieldUse::kHonoured, ""},          // GBNF (llama-server)
    {"json_schema", kOpenAiText, FieldUse::kHonoured, ""},      // llama-server's top-level form
    {"suffix", kCompletionsApi, FieldUse::kRejected, "insertion (suffix) is not supported"},
    {"user", kOpenAiText | kEmbeddingsApi | kResp, FieldUse::kNoOp,
     "an end-user id for the provider's abuse monitoring; hearth keeps no such records"},
    {"safety_identifier", kChatApi | kResp, FieldUse::kNoOp,
     "an end-user id for the provider's abuse monitoring; hearth keeps no such records"},
    {"metadata", kChatApi | kMessagesApi, FieldUse::kNoOp,
     "tags for stored completions / abuse tracking; hearth stores no completions"},
    {"store", kChatApi, FieldUse::kNoOp, "hearth stores no completions for later retrieval"},
    {"service_tier", kChatApi | kMessagesApi | kResp, FieldUse::kNoOp,
     "a billing / latency class of the hosted API; hearth has one tier"},
    {"prompt_cache_key", kChatApi | kResp, FieldUse::kNoOp,
     "a routing hint for the provider's prompt cache; hearth's cache is keyed by the tokens"},
    {"prompt_cache_retention", kChatApi | kResp, FieldUse::kNoOp,
     "the hosted prompt cache's lifetime; hearth's cache follows its own save policy"},
    {"cache_prompt", kText | kResp, FieldUse::kHonoured, ""},  // false: no lookup, no save
    {"parent_key", kText | kResp, FieldUse::kHonoured, ""},    // a finish_key to restore exactly
    {"session_id", kText, FieldUse::kHonoured, ""},            // a sticky session (X-Session-Id)
    // Speculative decoding (llama-server's names; "speculative.type" is hearth's)
    {"speculative.n_max", kText, FieldUse::kHonoured, ""},
    {"speculative.n_min", kText, FieldUse::kHonoured, ""},
    {"speculative.p_min", kText, FieldUse::kHonoured, ""},
    {"speculative.type", kText, FieldUse::kHonoured, ""},
    {"speculative.adaptive", kText, FieldUse::kHonoured, ""},  // hearth's adaptive draft length
    {"lora", kText, FieldUse::kHonoured, ""},                  // [{id, scale}] (llama-server)
    {"prediction", kChatApi, FieldUse::kNoOp,
     "predicted outputs only speed up the hosted API; they never change what is generated"},
    {"audio", kChatApi, FieldUse::kRejected, "audio output is not supported"},
    {"web_search_options", kChatApi, FieldUse::kRejected, "web search is not supported"},
    {"verbosity", kChatApi, FieldUse::kRejected, "verbosity control is not supported"},
    {"functions", kChatApi, FieldUse::kRejected,
     "the deprecated functions API is not supported (tool calling: tools)"},
    {"function_call", kChatApi, FieldUse::kRejected,
     "the deprecated functions API is not supported (tool calling: tools)"},
    // ---- tool calling and reasoning (docs/api.md "Tool calling and reasoning")
    {"tools", kChatApi | kMessagesApi | kResp, FieldUse::kHonoured, ""},
    {"tool_choice", kChatApi | kMessagesApi | kResp, FieldUse::kHonoured, ""},
    {"parallel_tool_calls", kChatApi | kResp, FieldUse::kHonoured, ""},
    {"enable_thinking", kChatApi | kResp, FieldUse::kHonoured, ""},  // Anthropic: thinking
    {"chat_template_kwargs", kChatApi | kMessagesApi | kResp, FieldUse::kHonoured, ""},
    {"thinking_budget_tokens", kChatApi | kResp, FieldUse::kHonoured, ""},
    {"reasoning_effort", kChatApi, FieldUse::kRejected,
     "effort levels are not mapped to a budget (use thinking_budget_tokens)"},
    // ---- llama-server / vLLM sampling extensions hearth honours
    {"min_p", kText | kResp, FieldUse::kHonoured, ""},
    {"repetition_penalty", kText | kResp, FieldUse::kHonoured, ""},
    // ---- Anthropic messages
    {"system", kMessagesApi, FieldUse::kHonoured, ""},
    {"stop_sequences", kMessagesApi, FieldUse::kHonoured, ""},
    {"thinking", kMessagesApi, FieldUse::kHonoured, ""},  // enabled (budget_tokens) or disabled
    {"container", kMessagesApi, FieldUse::kRejected, "code-execution containers are not supported"},
    {"mcp_servers", kMessagesApi, FieldUse::kRejected, "MCP servers are not supported"},
    {"context_management", kMessagesApi, FieldUse::kRejected,
     "context management is not supported"},
    // ---- OpenAI responses (docs/api.md "Responses")
    {"instructions", kResp, FieldUse::kHonoured, ""},
    {"max_output_tokens", kResp, FieldUse::kHonoured, ""},
    {"text", kResp, FieldUse::kHonoured, ""},       // format: text, json_object, json_schema
    {"reasoning", kResp, FieldUse::kHonoured, ""},  // effort none / high, summary
    {"store", kResp, FieldUse::kHonoured, ""},      // the bounded in-memory response store
    {"previous_response_id", kResp, FieldUse::kHonoured, ""},
    {"metadata", kResp, FieldUse::kHonoured, ""},    // kept on the response, returned as is
    {"include", kResp, FieldUse::kHonoured, ""},     // [] only: no extra output is offered
    {"truncation", kResp, FieldUse::kHonoured, ""},  // "disabled" only (the default)
    {"background", kResp, FieldUse::kHonoured, ""},  // false only
    {"max_tool_calls", kResp, FieldUse::kRejected,
     "a cap on built-in tool calls; hearth has no built-in tools"},
    {"top_logprobs", kResp, FieldUse::kRejected,
     "logprobs are not returned by /v1/responses (use /v1/chat/completions)"},
    {"conversation", kResp, FieldUse::kRejected,
     "the Conversations API is not supported (chain with previous_response_id)"},
    {"prompt", kResp, FieldUse::kRejected, "stored prompt templates are not supported"},
    {"stream_options", kResp, FieldUse::kRejected,
     "stream obfuscation is not offered (the stream is not padded)"},
    // ---- embeddings and responses
    {"input", kEmbeddingsApi | kResp, FieldUse::kHonoured, ""},
    {"encoding_format", kEmbeddingsApi, FieldUse::kHonoured, ""},
    {"dimensions", kEmbeddingsApi, FieldUse::kHonoured, ""},      // truncate, then normalise
    {"pooling", kEmbeddingsApi, FieldUse::kHonoured, ""},         // mean, cls, last, none
    {"embd_normalize", kEmbeddingsApi, FieldUse::kHonoured, ""},  // llama-server's
};

const RequestField* find_field(std::string_view name, RequestApi api) {
  for (const RequestField& f : kFields)
    if ((f.apis & api) != 0 && name == f.name) return &f;
  return nullptr;
}

}  // namespace

std::span<const RequestField> request_fields() {
  return kFields;
}

std::optional<ApiError> check_request_fields(const nlohmann::json& body, RequestApi api) {
  if (!body.is_object()) return std::nullopt;
  for (const auto& [key, value] : body.items()) {
    const RequestField* f = find_field(key, api);
    if (!f) {
      return invalid_request(
          "unknown field '" + key + "' (docs/api.md lists the fields this endpoint accepts)", key,
          "unknown_field");
    }
    if (f->use == FieldUse::kRejected && !value.is_null())
      return invalid_request("'" + key + "' is not supported: " + f->why, key, "unsupported_field");
  }
  return std::nullopt;
}

}  // namespace hearth::server
