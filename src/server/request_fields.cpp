#include "server/request_fields.h"

#include <string>
#include <string_view>

namespace hearth::server {
namespace {

constexpr unsigned kOpenAiText = kCompletionsApi | kChatApi;
constexpr unsigned kText = kOpenAiText | kMessagesApi;
constexpr unsigned kAll = kText | kEmbeddingsApi;

// Other features add or flip rows here (e.g. tools: kRejected -> kHonoured once the
// tool-calling parser reads them).
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
    {"best_of", kCompletionsApi, FieldUse::kHonoured, ""},   // 1 or n only
    {"modalities", kChatApi, FieldUse::kHonoured, ""},       // ["text"] only
    {"response_format", kChatApi, FieldUse::kHonoured, ""},  // {"type":"text"} only, for now
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
    {"cache_prompt", kOpenAiText, FieldUse::kNoOp,
     "llama-server's switch for prefix reuse; hearth always reuses cached prefixes, and a hit "
     "is bit-identical to a cold run"},
    {"prediction", kChatApi, FieldUse::kNoOp,
     "predicted outputs only speed up the hosted API; they never change what is generated"},
    {"audio", kChatApi, FieldUse::kRejected, "audio output is not supported"},
    {"web_search_options", kChatApi, FieldUse::kRejected, "web search is not supported"},
    {"verbosity", kChatApi, FieldUse::kRejected, "verbosity control is not supported"},
    {"functions", kChatApi, FieldUse::kRejected,
     "the deprecated functions API is not supported (tool calling: tools)"},
    {"function_call", kChatApi, FieldUse::kRejected,
     "the deprecated functions API is not supported (tool calling: tools)"},
    // Hooks: features other parts of the server add; refused until they read them.
    {"tools", kChatApi | kMessagesApi, FieldUse::kRejected, "tool calling is not supported yet"},
    {"tool_choice", kChatApi | kMessagesApi, FieldUse::kRejected,
     "tool calling is not supported yet"},
    {"parallel_tool_calls", kChatApi, FieldUse::kRejected, "tool calling is not supported yet"},
    {"grammar", kOpenAiText, FieldUse::kRejected,
     "grammar-constrained sampling is not supported yet"},
    {"reasoning_effort", kChatApi, FieldUse::kRejected, "reasoning control is not supported yet"},
    {"enable_thinking", kChatApi, FieldUse::kRejected, "reasoning control is not supported yet"},
    {"chat_template_kwargs", kChatApi, FieldUse::kRejected,
     "chat template arguments are not supported yet"},
    // ---- llama-server / vLLM sampling extensions hearth honours
    {"min_p", kText, FieldUse::kHonoured, ""},
    {"repetition_penalty", kText, FieldUse::kHonoured, ""},
    // ---- Anthropic messages
    {"system", kMessagesApi, FieldUse::kHonoured, ""},
    {"stop_sequences", kMessagesApi, FieldUse::kHonoured, ""},
    {"thinking", kMessagesApi, FieldUse::kHonoured, ""},  // {"type":"disabled"} only, for now
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
