#include "server/request_parse.h"

#include <cctype>
#include <climits>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "server/request_fields.h"

#include "server/response_format.h"

#include "server/tool_request.h"

namespace hearth::server {
bool present(const nlohmann::json& body, const char* key) {
  auto it = body.find(key);
  return it != body.end() && !it->is_null();
}

namespace {

using nlohmann::json;

std::optional<ApiError> get_number(const json& body, const char* key, double& out, double lo,
                                   double hi) {
  if (!present(body, key)) return std::nullopt;
  const json& v = body.at(key);
  if (!v.is_number()) return type_error(key, "a number");
  const double d = v.get<double>();
  if (d < lo || d > hi) {
    return value_error(key, "must be between " + json(lo).dump() + " and " + json(hi).dump());
  }
  out = d;
  return std::nullopt;
}

std::optional<ApiError> get_int(const json& body, const char* key, int64_t& out, int64_t lo) {
  if (!present(body, key)) return std::nullopt;
  const json& v = body.at(key);
  if (!v.is_number_integer()) return type_error(key, "an integer");
  const int64_t i = v.get<int64_t>();
  if (i < lo) return value_error(key, "must be >= " + std::to_string(lo));
  out = i;
  return std::nullopt;
}

std::optional<ApiError> get_bool(const json& body, const char* key, bool& out) {
  if (!present(body, key)) return std::nullopt;
  if (!body.at(key).is_boolean()) return type_error(key, "a boolean");
  out = body.at(key).get<bool>();
  return std::nullopt;
}

std::optional<ApiError> get_stop(const json& body, const char* key, std::vector<std::string>& out) {
  if (!present(body, key)) return std::nullopt;
  const json& v = body.at(key);
  if (v.is_string()) {
    out.push_back(v.get<std::string>());
    return std::nullopt;
  }
  if (!v.is_array()) return type_error(key, "a string or an array of strings");
  if (v.size() > 16) return value_error(key, "may hold at most 16 sequences");
  for (const auto& s : v) {
    if (!s.is_string()) return type_error(key, "a string or an array of strings");
    out.push_back(s.get<std::string>());
  }
  return std::nullopt;
}

// logit_bias: {"token id": bias in [-100, 100]}; the ids are checked against the model's
// vocabulary when the model is known (plan_generation).
std::optional<ApiError> parse_logit_bias(const json& body,
                                         std::vector<std::pair<TokenId, float>>& out) {
  if (!present(body, "logit_bias")) return std::nullopt;
  const json& m = body["logit_bias"];
  if (!m.is_object()) return type_error("logit_bias", "an object of token id -> bias");
  for (const auto& [key, value] : m.items()) {
    const std::string field = "logit_bias";
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(key, &used, 10);
    } catch (...) {
      used = 0;
    }
    if (key.empty() || used != key.size() || id < 0 || id > std::numeric_limits<TokenId>::max() ||
        !std::isdigit(static_cast<unsigned char>(key[0]))) {
      return value_error(field, "key '" + key + "' is not a token id (a non-negative integer)");
    }
    if (!value.is_number()) return type_error(field + "." + key, "a number between -100 and 100");
    const double bias = value.get<double>();
    if (!(bias >= -100 && bias <= 100))
      return value_error(field, "value for token " + key + " must be between -100 and 100");
    out.emplace_back(static_cast<TokenId>(id), static_cast<float>(bias));
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_common_fields(const json& body, TextRequest& out, bool openai) {
  if (present(body, "model")) {
    if (!body["model"].is_string()) return type_error("model", "a string");
    out.model = body["model"].get<std::string>();
  }
  if (auto e = get_bool(body, "stream", out.stream)) return e;
  // Parsed as the JSON numbers they are, range-checked, then stored in the runtime's
  // own knobs (float / int32 / optional seed).
  SamplingOptions& s = out.sampling;
  double temperature = s.temperature, top_p = s.top_p, min_p = s.min_p;
  double repetition = s.repetition_penalty, frequency = s.frequency_penalty,
         presence = s.presence_penalty;
  int64_t top_k = s.top_k;
  if (auto e = get_number(body, "temperature", temperature, 0.0, openai ? 2.0 : 1.0)) return e;
  if (auto e = get_number(body, "top_p", top_p, 0.0, 1.0)) return e;
  if (auto e = get_int(body, "top_k", top_k, 0)) return e;
  if (top_k > INT32_MAX) return value_error("top_k", "must be <= " + std::to_string(INT32_MAX));
  if (auto e = get_number(body, "min_p", min_p, 0.0, 1.0)) return e;
  if (auto e = get_number(body, "repetition_penalty", repetition, 0.0, 10.0)) return e;
  if (present(body, "repetition_penalty") && repetition <= 0) {
    return value_error("repetition_penalty", "must be > 0");
  }
  if (auto e = get_number(body, "frequency_penalty", frequency, -2.0, 2.0)) return e;
  if (auto e = get_number(body, "presence_penalty", presence, -2.0, 2.0)) return e;
  s.temperature = static_cast<float>(temperature);
  s.top_p = static_cast<float>(top_p);
  s.top_k = static_cast<int32_t>(top_k);
  s.min_p = static_cast<float>(min_p);
  s.repetition_penalty = static_cast<float>(repetition);
  s.frequency_penalty = static_cast<float>(frequency);
  s.presence_penalty = static_cast<float>(presence);
  if (present(body, "seed")) {
    const json& v = body["seed"];
    if (!v.is_number_integer()) return type_error("seed", "an integer");
    s.seed = v.is_number_unsigned() ? v.get<uint64_t>() : static_cast<uint64_t>(v.get<int64_t>());
  }
  int64_t max_tokens = -1;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (auto e = get_int(body, key, max_tokens, 1)) return e;
  }
  if (max_tokens > 0) out.max_tokens = max_tokens;
  if (openai) {
    if (auto e = get_stop(body, "stop", out.stop)) return e;
    int64_t n = 1;
    if (auto e = get_int(body, "n", n, 1)) return e;
    if (n > kMaxChoices) return value_error("n", "must be <= " + std::to_string(kMaxChoices));
    out.n = static_cast<int32_t>(n);
    if (auto e = parse_logit_bias(body, s.logit_bias)) return e;
    if (present(body, "stream_options")) {
      const json& so = body["stream_options"];
      if (!so.is_object()) return type_error("stream_options", "an object");
      if (so.contains("include_usage") && !so["include_usage"].is_null()) {
        if (!so["include_usage"].is_boolean())
          return type_error("stream_options.include_usage", "a boolean");
        out.include_usage = so["include_usage"].get<bool>();
      }
    }
  } else {
    if (auto e = get_stop(body, "stop_sequences", out.stop)) return e;
  }
  if (auto e = parse_lora_field(body, out)) return e;
  return parse_cache_fields(body, out);
}

namespace {

// Message content: a string or an array of {"type":"text","text":...} parts.
std::optional<ApiError> content_text(const json& content, const std::string& field,
                                     std::string& out) {
  if (content.is_string()) {
    out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) return type_error(field, "a string or an array of text parts");
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string part = field + "[" + std::to_string(i) + "]";
    const json& p = content[i];
    if (!p.is_object()) return type_error(part, "an object");
    if (!p.contains("type") || p["type"] != "text") {
      return value_error(part + ".type", "must be \"text\" (only text content is supported)");
    }
    if (!p.contains("text") || !p["text"].is_string())
      return type_error(part + ".text", "a string");
    out += p["text"].get<std::string>();
  }
  return std::nullopt;
}

std::optional<ApiError> parse_messages_array(const json& body, bool openai,
                                             std::vector<ChatMessage>& out) {
  if (!body.contains("messages"))
    return invalid_request("'messages' is required", "messages", "missing_field");
  const json& msgs = body["messages"];
  if (!msgs.is_array()) return type_error("messages", "an array");
  if (msgs.empty()) return value_error("messages", "must not be empty");
  for (size_t i = 0; i < msgs.size(); ++i) {
    const std::string field = "messages[" + std::to_string(i) + "]";
    const json& m = msgs[i];
    if (!m.is_object()) return type_error(field, "an object");
    if (!m.contains("role") || !m["role"].is_string())
      return type_error(field + ".role", "a string");
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";
    const bool ok_role =
        role == "user" || role == "assistant" || (openai && (role == "system" || role == "tool"));
    if (!ok_role) {
      return value_error(field + ".role",
                         openai ? "must be one of system, developer, user, assistant, tool"
                                : "must be user or assistant (use the top-level 'system')");
    }
    if (!openai && m.contains("content") && m["content"].is_array()) {
      if (auto e = parse_anthropic_blocks(m["content"], role, field + ".content", out)) return e;
      continue;
    }
    ChatMessage cm{role, ""};
    if (openai && role == "assistant" && present(m, "tool_calls")) {
      if (auto e = parse_openai_tool_calls(m["tool_calls"], field + ".tool_calls", cm.tool_calls))
        return e;
    }
    if (openai && role == "assistant" && present(m, "reasoning_content")) {
      if (!m["reasoning_content"].is_string())
        return type_error(field + ".reasoning_content", "a string");
      cm.reasoning_content = m["reasoning_content"].get<std::string>();
    }
    if (role == "tool") {
      if (!m.contains("tool_call_id") || !m["tool_call_id"].is_string())
        return type_error(field + ".tool_call_id", "a string");
      cm.tool_call_id = m["tool_call_id"].get<std::string>();
      if (present(m, "name")) {
        if (!m["name"].is_string()) return type_error(field + ".name", "a string");
        cm.name = m["name"].get<std::string>();
      }
    }
    if (!m.contains("content") || m["content"].is_null()) {
      if (role == "assistant") {
        cm.content_null = !cm.tool_calls.empty() && m.contains("content");
        cm.content_absent = !cm.tool_calls.empty() && !m.contains("content");
        out.push_back(std::move(cm));
        continue;
      }
      return invalid_request("'" + field + ".content' is required", field + ".content",
                             "missing_field");
    }
    if (auto e = content_text(m["content"], field + ".content", cm.content)) return e;
    out.push_back(std::move(cm));
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_speculative_fields(const json& body,
                                                 runtime::RequestParams::Speculative& out) {
  int64_t n = 0;
  if (present(body, "speculative.n_max")) {
    if (auto e = get_int(body, "speculative.n_max", n, 0)) return e;
    if (n > 256) return value_error("speculative.n_max", "must be <= 256");
    out.n_max = static_cast<int32_t>(n);
  }
  if (present(body, "speculative.n_min")) {
    if (auto e = get_int(body, "speculative.n_min", n, 0)) return e;
    if (n > 256) return value_error("speculative.n_min", "must be <= 256");
    out.n_min = static_cast<int32_t>(n);
  }
  if (present(body, "speculative.p_min")) {
    double p = 0;
    if (auto e = get_number(body, "speculative.p_min", p, 0.0, 1.0)) return e;
    out.p_min = static_cast<float>(p);
  }
  if (present(body, "speculative.type")) {
    const json& v = body["speculative.type"];
    const auto t =
        v.is_string() ? runtime::speculative_type_from_name(v.get<std::string>()) : std::nullopt;
    if (!t) return value_error("speculative.type", "must be \"none\", \"draft\" or \"ngram\"");
    out.type = *t;
  }
  if (present(body, "speculative.adaptive")) {
    bool adaptive = true;
    if (auto e = get_bool(body, "speculative.adaptive", adaptive)) return e;
    out.adaptive = adaptive;
  }
  return std::nullopt;
}

std::optional<ApiError> parse_cache_fields(const json& body, TextRequest& out) {
  if (auto e = parse_speculative_fields(body, out.speculative)) return e;
  if (present(body, "parent_key")) {
    const json& v = body["parent_key"];
    if (!v.is_string()) return type_error("parent_key", "a string (a finish_key)");
    const std::string key = v.get<std::string>();
    if (key.size() != 64 || key.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
      return value_error("parent_key", "must be a finish_key: 64 hex digits");
    out.parent_key = key;
  }
  if (present(body, "session_id")) {
    const json& v = body["session_id"];
    if (!v.is_string()) return type_error("session_id", "a string");
    const std::string id = v.get<std::string>();
    if (Status s = runtime::check_session_id(id); !s.ok())
      return value_error("session_id", s.message());
    out.session_id = id;
  }
  return get_bool(body, "cache_prompt", out.cache_prompt);
}

std::optional<ApiError> session_header(const std::string& header, TextRequest& out) {
  if (header.empty()) return std::nullopt;
  if (Status s = runtime::check_session_id(header); !s.ok())
    return invalid_request("header X-Session-Id: " + s.message(), "session_id", "invalid_value");
  if (out.session_id && *out.session_id != header)
    return invalid_request("'session_id' is '" + *out.session_id +
                               "' but header X-Session-Id is '" + header +
                               "': send one, or the same in both",
                           "session_id", "session_id_conflict");
  out.session_id = header;
  return std::nullopt;
}

std::optional<ApiError> parse_lora_field(const json& body, TextRequest& out) {
  if (!present(body, "lora")) return std::nullopt;
  const json& v = body["lora"];
  if (!v.is_array()) return type_error("lora", "an array of {\"id\", \"scale\"}");
  std::vector<runtime::AdapterScale> list;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string field = std::string("lora[").append(std::to_string(i)).append("]");
    const json& e = v[i];
    if (!e.is_object()) return type_error(field, "an object {\"id\", \"scale\"}");
    for (const auto& [key, value] : e.items()) {
      if (key != "id" && key != "scale")
        return invalid_request("unknown field '" + field + "." + key + "' (id, scale)",
                               field + "." + key, "unknown_field");
    }
    if (!e.contains("id") || !e["id"].is_number_integer())
      return type_error(field + ".id", "an integer (an id of GET /lora-adapters)");
    const int64_t id = e["id"].get<int64_t>();
    if (id < 0 || id > INT32_MAX) return value_error(field + ".id", "must be a non-negative id");
    runtime::AdapterScale a;
    a.id = static_cast<int32_t>(id);
    if (e.contains("scale")) {
      if (!e["scale"].is_number()) return type_error(field + ".scale", "a number");
      const double scale = e["scale"].get<double>();
      if (!std::isfinite(scale) || std::fabs(scale) > 1e6)
        return value_error(field + ".scale", "must be a finite number of magnitude <= 1e6");
      a.scale = static_cast<float>(scale);
    }
    list.push_back(a);
  }
  out.lora = std::move(list);
  return std::nullopt;
}

std::optional<ApiError> parse_json_object(const std::string& body, json& out) {
  out = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) {
    return invalid_request("request body is not valid JSON", "", "invalid_json");
  }
  if (!out.is_object())
    return invalid_request("request body must be a JSON object", "", "invalid_json");
  return std::nullopt;
}

std::optional<ApiError> parse_completion_request(const json& body, TextRequest& out) {
  out.is_chat = false;
  out.prompt_field = "prompt";
  if (auto e = check_request_fields(body, kCompletionsApi)) return e;
  if (auto e = parse_common_fields(body, out, /*openai=*/true)) return e;
  if (auto e = parse_grammar_fields(body, out.sampling)) return e;
  if (present(body, "logprobs")) {
    int64_t lp = 0;
    if (auto e = get_int(body, "logprobs", lp, 0)) return e;
    if (lp > runtime::kMaxTopLogprobs)
      return value_error("logprobs",
                         "must be between 0 and " + std::to_string(runtime::kMaxTopLogprobs));
    out.logprobs = static_cast<int32_t>(lp);
  }
  if (auto e = get_bool(body, "echo", out.echo)) return e;
  if (out.echo && out.logprobs >= 0)
    return value_error("echo",
                       "cannot be combined with 'logprobs' (the prompt tokens' logprobs are not "
                       "computed)");
  if (present(body, "best_of")) {
    int64_t best_of = 1;
    if (auto e = get_int(body, "best_of", best_of, 1)) return e;
    if (best_of != 1 && best_of != out.n)
      return value_error("best_of",
                         "must be 1 or equal to n (ranking candidates is not supported)");
  }
  if (!body.contains("prompt"))
    return invalid_request("'prompt' is required", "prompt", "missing_field");
  const json& p = body["prompt"];
  if (p.is_string()) {
    out.prompt = p.get<std::string>();
  } else if (p.is_array() && p.size() == 1 && p[0].is_string()) {
    out.prompt = p[0].get<std::string>();
  } else if (p.is_array() && !p.empty() && p[0].is_number_integer()) {
    std::vector<TokenId> tokens;
    for (const auto& t : p) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
          t.get<int64_t>() > std::numeric_limits<TokenId>::max()) {
        return type_error("prompt", "a string or an array of non-negative token ids");
      }
      tokens.push_back(static_cast<TokenId>(t.get<int64_t>()));
    }
    out.prompt_tokens = std::move(tokens);
  } else if (p.is_array() && p.size() > 1 && p[0].is_string()) {
    return value_error("prompt", "may hold only one prompt (batched prompts are not supported)");
  } else {
    return type_error("prompt", "a string, an array with one string, or an array of token ids");
  }
  return std::nullopt;
}

std::optional<ApiError> parse_chat_request(const json& body, TextRequest& out) {
  out.is_chat = true;
  out.prompt_field = "messages";
  if (auto e = check_request_fields(body, kChatApi)) return e;
  if (auto e = parse_common_fields(body, out, /*openai=*/true)) return e;
  if (auto e = parse_grammar_fields(body, out.sampling)) return e;
  bool logprobs = false;
  if (auto e = get_bool(body, "logprobs", logprobs)) return e;
  int64_t top = 0;
  if (auto e = get_int(body, "top_logprobs", top, 0)) return e;
  if (top > runtime::kMaxTopLogprobs)
    return value_error("top_logprobs",
                       "must be between 0 and " + std::to_string(runtime::kMaxTopLogprobs));
  if (present(body, "top_logprobs") && !logprobs)
    return value_error("top_logprobs", "requires 'logprobs' to be true");
  if (logprobs) out.logprobs = static_cast<int32_t>(top);
  if (present(body, "modalities")) {
    const json& m = body["modalities"];
    if (!m.is_array()) return type_error("modalities", "an array of strings");
    for (const auto& x : m)
      if (x != "text") return value_error("modalities", "may only hold \"text\"");
  }
  if (auto e = parse_openai_tool_fields(body, out)) return e;
  return parse_messages_array(body, /*openai=*/true, out.messages);
}

std::optional<ApiError> parse_messages_request(const json& body, TextRequest& out) {
  out.is_chat = true;
  out.prompt_field = "messages";
  if (auto e = check_request_fields(body, kMessagesApi)) return e;
  if (auto e = parse_common_fields(body, out, /*openai=*/false)) return e;
  if (!out.max_tokens) {
    return invalid_request("'max_tokens' is required", "max_tokens", "missing_field");
  }
  if (auto e = parse_anthropic_tool_fields(body, out)) return e;
  std::vector<ChatMessage> messages;
  if (present(body, "system")) {
    std::string system;
    if (auto e = content_text(body["system"], "system", system)) return e;
    messages.push_back({"system", system});
  }
  if (auto e = parse_messages_array(body, /*openai=*/false, messages)) return e;
  out.messages = std::move(messages);
  return std::nullopt;
}

}  // namespace hearth::server
