#include "server/request_fields.h"

#include <string>
#include <string_view>

namespace hearth::server {
namespace {

constexpr unsigned kOpenAiText = kCompletionsApi | kChatApi;
constexpr unsigned kText = kOpenAiText | kMessagesApi;
constexpr unsigned kAll = kText | kEmbeddingsApi;

// Every field a request may carry: a new request feature adds its row here.
constexpr RequestField kFields[] = {
    // ---- shared
    {"model", kAll, FieldUse::kHonoured, ""},
    {"stream", kText, FieldUse::kHonoured, ""},
    {"temperature", kText, FieldUse::kHonoured, ""},
    {"top_p", kText, FieldUse::kHonoured, ""},
    {"top_k", kText, FieldUse::kHonoured, ""},
    {"max_tokens", kText, FieldUse::kHonoured, ""},
    {"seed", kText, FieldUse::kHonoured, ""},
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
    {"user", kOpenAiText | kEmbeddingsApi, FieldUse::kNoOp,
     "an end-user id for the provider's abuse monitoring; hearth keeps no such records"},
    {"safety_identifier", kChatApi, FieldUse::kNoOp,
     "an end-user id for the provider's abuse monitoring; hearth keeps no such records"},
    {"metadata", kChatApi | kMessagesApi, FieldUse::kNoOp,
     "tags for stored completions / abuse tracking; hearth stores no completions"},
    {"store", kChatApi, FieldUse::kNoOp, "hearth stores no completions for later retrieval"},
    {"service_tier", kChatApi | kMessagesApi, FieldUse::kNoOp,
     "a billing / latency class of the hosted API; hearth has one tier"},
    {"prompt_cache_key", kChatApi, FieldUse::kNoOp,
     "a routing hint for the provider's prompt cache; hearth's cache is keyed by the tokens"},
    {"prompt_cache_retention", kChatApi, FieldUse::kNoOp,
     "the hosted prompt cache's lifetime; hearth's cache follows its own save policy"},
    {"cache_prompt", kText, FieldUse::kHonoured, ""},  // false: no lookup, no save
    {"parent_key", kText, FieldUse::kHonoured, ""},    // a finish_key to restore exactly
    {"lora", kText, FieldUse::kHonoured, ""},          // [{id, scale}] (llama-server)
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
    {"tools", kChatApi | kMessagesApi, FieldUse::kHonoured, ""},
    {"tool_choice", kChatApi | kMessagesApi, FieldUse::kHonoured, ""},
    {"parallel_tool_calls", kChatApi, FieldUse::kHonoured, ""},
    {"enable_thinking", kChatApi, FieldUse::kHonoured, ""},  // Anthropic: thinking
    {"chat_template_kwargs", kChatApi | kMessagesApi, FieldUse::kHonoured, ""},
    {"thinking_budget_tokens", kChatApi, FieldUse::kHonoured, ""},
    {"reasoning_effort", kChatApi, FieldUse::kRejected,
     "effort levels are not mapped to a budget (use thinking_budget_tokens)"},
    // ---- llama-server / vLLM sampling extensions hearth honours
    {"min_p", kText, FieldUse::kHonoured, ""},
    {"repetition_penalty", kText, FieldUse::kHonoured, ""},
    // ---- Anthropic messages
    {"system", kMessagesApi, FieldUse::kHonoured, ""},
    {"stop_sequences", kMessagesApi, FieldUse::kHonoured, ""},
    {"thinking", kMessagesApi, FieldUse::kHonoured, ""},  // enabled (budget_tokens) or disabled
    {"container", kMessagesApi, FieldUse::kRejected, "code-execution containers are not supported"},
    {"mcp_servers", kMessagesApi, FieldUse::kRejected, "MCP servers are not supported"},
    {"context_management", kMessagesApi, FieldUse::kRejected,
     "context management is not supported"},
    // ---- embeddings
    {"input", kEmbeddingsApi, FieldUse::kHonoured, ""},
    {"encoding_format", kEmbeddingsApi, FieldUse::kHonoured, ""},
    {"dimensions", kEmbeddingsApi, FieldUse::kHonoured, ""},  // the model's width only
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
