#include "server/responses/responses_request.h"

#include <cmath>
#include <map>
#include <utility>

#include "server/request_fields.h"
#include "server/response_format.h"
#include "server/tool_request.h"

namespace hearth::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// Refuses keys of an object that are not in `known` (the item's or the part's fields).
std::optional<ApiError> only_keys(const json& obj, const std::string& field,
                                  std::initializer_list<const char*> known) {
  for (const auto& [key, v] : obj.items()) {
    (void)v;
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok)
      return invalid_request("unknown field '" + field + "." + key + "'", field + "." + key,
                             "unknown_field");
  }
  return std::nullopt;
}

std::optional<ApiError> get_string(const json& obj, const char* key, const std::string& field,
                                   std::string& out) {
  if (!obj.contains(key) || !obj[key].is_string()) return type_error(field + "." + key, "a string");
  out = obj[key].get<std::string>();
  return std::nullopt;
}

// A message's content: a string, or parts of type input_text / output_text.
std::optional<ApiError> message_text(const json& content, const std::string& field,
                                     std::string& out) {
  if (content.is_string()) {
    out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) return type_error(field, "a string or an array of text parts");
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    const json& p = content[i];
    if (!p.is_object()) return type_error(f, "an object");
    if (!p.contains("type") || !p["type"].is_string()) return type_error(f + ".type", "a string");
    const std::string type = p["type"].get<std::string>();
    if (type != "input_text" && type != "output_text")
      return value_error(f + ".type", "must be input_text or output_text (only text is supported)");
    if (type == "input_text") {
      if (auto e = only_keys(p, f, {"type", "text"})) return e;
    } else if (auto e = only_keys(p, f, {"type", "text", "annotations", "logprobs"})) {
      return e;
    }
    std::string text;
    if (auto e = get_string(p, "text", f, text)) return e;
    out += text;
  }
  return std::nullopt;
}

// The last assistant message of `out`, or a new one when the last message is another role.
ChatMessage& assistant_turn(std::vector<ChatMessage>& out) {
  if (out.empty() || out.back().role != "assistant") out.emplace_back("assistant", "");
  return out.back();
}

std::optional<ApiError> parse_item(const json& item, const std::string& f,
                                   std::vector<ChatMessage>& out) {
  if (!item.is_object()) return type_error(f, "an object");
  std::string type = "message";
  if (item.contains("type")) {
    if (!item["type"].is_string()) return type_error(f + ".type", "a string");
    type = item["type"].get<std::string>();
  }
  if (type == "message") {
    if (auto e = only_keys(item, f, {"type", "role", "content", "id", "status"})) return e;
    std::string role;
    if (auto e = get_string(item, "role", f, role)) return e;
    if (role == "developer") role = "system";
    if (role != "user" && role != "system" && role != "assistant")
      return value_error(f + ".role", "must be user, system, developer or assistant");
    if (!item.contains("content")) return missing_field(f + ".content");
    std::string text;
    if (auto e = message_text(item["content"], f + ".content", text)) return e;
    if (role == "assistant" && !out.empty() && out.back().role == "assistant" &&
        out.back().content.empty() && out.back().tool_calls.empty()) {
      out.back().content = std::move(text);  // after a reasoning item: the same turn
    } else {
      out.emplace_back(role, std::move(text));
    }
    return std::nullopt;
  }
  if (type == "function_call") {
    if (auto e = only_keys(item, f, {"type", "call_id", "name", "arguments", "id", "status"}))
      return e;
    ToolCall call;
    if (auto e = get_string(item, "call_id", f, call.id)) return e;
    if (auto e = get_string(item, "name", f, call.name)) return e;
    if (auto e = get_string(item, "arguments", f, call.arguments)) return e;
    ChatMessage& turn = assistant_turn(out);
    if (turn.tool_calls.empty() && turn.content.empty()) turn.content_null = true;
    turn.tool_calls.push_back(std::move(call));
    return std::nullopt;
  }
  if (type == "function_call_output") {
    if (auto e = only_keys(item, f, {"type", "call_id", "output", "id", "status"})) return e;
    ChatMessage result{"tool", ""};
    if (auto e = get_string(item, "call_id", f, result.tool_call_id)) return e;
    if (!item.contains("output")) return missing_field(f + ".output");
    if (item["output"].is_array()) {
      if (auto e = message_text(item["output"], f + ".output", result.content)) return e;
    } else if (auto e = get_string(item, "output", f, result.content)) {
      return e;
    }
    out.push_back(std::move(result));
    return std::nullopt;
  }
  if (type == "reasoning") {
    // The think block of the assistant turn that follows: the template replays or drops it.
    if (auto e = only_keys(item, f, {"type", "id", "summary", "content", "status"})) return e;
    if (present(item, "encrypted_content"))
      return value_error(f + ".encrypted_content", "is not supported (hearth encrypts nothing)");
    std::string text;
    for (const char* key : {"content", "summary"}) {
      if (!present(item, key)) continue;
      const json& parts = item[key];
      const std::string pf = f + "." + key;
      if (!parts.is_array()) return type_error(pf, "an array of text parts");
      for (size_t i = 0; i < parts.size(); ++i) {
        const std::string pi = pf + "[" + std::to_string(i) + "]";
        if (!parts[i].is_object()) return type_error(pi, "an object");
        std::string part;
        if (auto e = get_string(parts[i], "text", pi, part)) return e;
        if (text.empty()) text = std::move(part);  // content and summary hold the same text
      }
    }
    ChatMessage& turn = assistant_turn(out);
    turn.reasoning_content += text;
    return std::nullopt;
  }
  return value_error(
      f + ".type",
      "must be message, function_call, function_call_output or reasoning (got '" + type + "')");
}

std::optional<ApiError> parse_input(const json& body, std::vector<ChatMessage>& out) {
  if (!body.contains("input")) return missing_field("input");
  const json& input = body["input"];
  if (input.is_string()) {
    out.emplace_back("user", input.get<std::string>());
    return std::nullopt;
  }
  if (!input.is_array()) return type_error("input", "a string or an array of input items");
  for (size_t i = 0; i < input.size(); ++i)
    if (auto e = parse_item(input[i], "input[" + std::to_string(i) + "]", out)) return e;
  // An assistant turn made only of a reasoning item says nothing to render.
  for (ChatMessage& m : out)
    if (m.role == "assistant" && m.content.empty() && m.tool_calls.empty()) m.content_null = false;
  return std::nullopt;
}

// Responses' flat function tool -> the chat shape {type, function: {...}}; order kept.
template <typename Json>
std::optional<ApiError> chat_tool(const Json& t, const std::string& f, Json& out) {
  if (!t.is_object()) return type_error(f, "an object");
  if (!t.contains("type") || t["type"] != "function") {
    const std::string type = t.contains("type") && t["type"].is_string()
                                 ? t["type"].template get<std::string>()
                                 : std::string("(none)");
    return invalid_request(
        "'" + f + ".type' is " + type + ": only function tools are supported (no built-in tools)",
        "tools", "unsupported_tool");
  }
  Json fn = Json::object();
  for (const auto& [key, v] : t.items()) {
    if (key == "type") continue;
    if (key != "name" && key != "description" && key != "parameters" && key != "strict")
      return invalid_request("unknown field '" + f + "." + key + "'", f + "." + key,
                             "unknown_field");
    fn[key] = v;
  }
  out = Json{{"type", "function"}, {"function", std::move(fn)}};
  return std::nullopt;
}

// tools, tool_choice, parallel_tool_calls and the thinking fields, through the chat parser.
std::optional<ApiError> parse_tools(const json& body, TextRequest& out) {
  json chat = json::object();
  for (const char* key : {"parallel_tool_calls", "chat_template_kwargs", "enable_thinking",
                          "thinking_budget_tokens"}) {
    if (body.contains(key)) chat[key] = body[key];
  }
  if (present(body, "tools")) {
    if (!body["tools"].is_array()) return type_error("tools", "an array");
    chat["tools"] = json::array();
    for (size_t i = 0; i < body["tools"].size(); ++i) {
      json t;
      if (auto e = chat_tool(body["tools"][i], "tools[" + std::to_string(i) + "]", t)) return e;
      chat["tools"].push_back(std::move(t));
    }
  }
  if (present(body, "tool_choice")) {
    const json& c = body["tool_choice"];
    if (c.is_object()) {
      if (!c.contains("type") || c["type"] != "function")
        return value_error("tool_choice.type",
                           "must be \"function\" (built-in and allowed_tools choices are not "
                           "supported)");
      if (auto e = only_keys(c, "tool_choice", {"type", "name"})) return e;
      if (!c.contains("name") || !c["name"].is_string())
        return type_error("tool_choice.name", "a string");
      chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", c["name"]}}}};
    } else {
      chat["tool_choice"] = c;
    }
  }
  if (auto e = parse_openai_tool_fields(chat, out)) return responses_field_names(*e);
  return std::nullopt;
}

// text: {format: {type: text | json_object | json_schema (name, schema, description,
// strict)}}, through the chat path's response_format.
std::optional<ApiError> parse_text(const json& body, SamplingOptions& sampling) {
  if (!present(body, "text")) return std::nullopt;
  const json& text = body["text"];
  if (!text.is_object()) return type_error("text", "an object");
  if (auto e = only_keys(text, "text", {"format", "verbosity"})) return e;
  if (present(text, "verbosity"))
    return invalid_request("'text.verbosity' is not supported: verbosity control is not offered",
                           "text.verbosity", "unsupported_field");
  if (!present(text, "format")) return std::nullopt;
  const json& f = text["format"];
  if (!f.is_object() || !f.contains("type") || !f["type"].is_string())
    return type_error("text.format", "an object with a 'type' of text, json_object or json_schema");
  json rf = {{"type", f["type"]}};
  if (f["type"] == "json_schema") {
    if (auto e = only_keys(f, "text.format", {"type", "name", "schema", "description", "strict"}))
      return e;
    json js = f;
    js.erase("type");
    rf["json_schema"] = std::move(js);
  } else if (auto e = only_keys(f, "text.format", {"type"})) {
    return e;
  }
  if (auto e = parse_grammar_fields(json{{"response_format", rf}}, sampling))
    return responses_field_names(*e);
  return std::nullopt;
}

// reasoning: {effort, summary}. "none" turns the template's thinking off, "high" on
// (an unbounded think block is the most effort); the levels between are not mapped to a
// budget. The summary is always the whole think text (hearth does not summarize).
std::optional<ApiError> parse_reasoning(const json& body, TextRequest& out) {
  if (!present(body, "reasoning")) return std::nullopt;
  const json& r = body["reasoning"];
  if (!r.is_object()) return type_error("reasoning", "an object");
  if (auto e = only_keys(r, "reasoning", {"effort", "summary", "generate_summary"})) return e;
  if (present(r, "effort")) {
    const json& effort = r["effort"];
    if (effort == "none") {
      out.template_kwargs["enable_thinking"] = false;
    } else if (effort == "high") {
      out.template_kwargs["enable_thinking"] = true;
    } else {
      return invalid_request(
          "'reasoning.effort' must be \"none\" (thinking off) or \"high\" (thinking on): the "
          "levels between are not mapped to a budget (use thinking_budget_tokens)",
          "reasoning.effort", "unsupported_value");
    }
  }
  for (const char* key : {"summary", "generate_summary"}) {
    if (!present(r, key)) continue;
    const json& s = r[key];
    if (s != "auto" && s != "concise" && s != "detailed")
      return value_error(std::string("reasoning.") + key, "must be auto, concise or detailed");
  }
  return std::nullopt;
}

// The tools as the caller ordered their keys (the template prints them).
void keep_responses_tool_order(const std::string& raw_body, TextRequest& tr) {
  if (tr.tools.empty()) return;
  const ordered_json raw = ordered_json::parse(raw_body, nullptr, false);
  if (raw.is_discarded() || !raw.contains("tools") || !raw["tools"].is_array()) return;
  ordered_json tools = ordered_json::array();
  for (const ordered_json& t : raw["tools"]) {
    ordered_json chat;
    if (chat_tool(t, "tools", chat)) return;
    tools.push_back(std::move(chat));
  }
  keep_tool_key_order(ordered_json{{"tools", std::move(tools)}}.dump(), false, tr);
}

std::optional<ApiError> parse_options(const json& body, ResponsesRequest& out) {
  if (present(body, "instructions")) {
    if (!body["instructions"].is_string()) return type_error("instructions", "a string");
    out.instructions = body["instructions"].get<std::string>();
  }
  if (present(body, "previous_response_id")) {
    if (!body["previous_response_id"].is_string())
      return type_error("previous_response_id", "a string");
    out.previous_response_id = body["previous_response_id"].get<std::string>();
  }
  if (present(body, "store")) {
    if (!body["store"].is_boolean()) return type_error("store", "a boolean");
    out.store = body["store"].get<bool>();
  }
  if (present(body, "max_output_tokens")) {
    const json& v = body["max_output_tokens"];
    if (!v.is_number_integer()) return type_error("max_output_tokens", "an integer");
    if (v.get<int64_t>() < 1) return value_error("max_output_tokens", "must be >= 1");
    out.text.max_tokens = v.get<int64_t>();
  }
  if (present(body, "metadata")) {
    const json& m = body["metadata"];
    if (!m.is_object()) return type_error("metadata", "an object of strings");
    if (m.size() > 16) return value_error("metadata", "may hold at most 16 keys");
    for (const auto& [k, v] : m.items())
      if (!v.is_string()) return type_error("metadata." + k, "a string");
  }
  if (present(body, "user") && !body["user"].is_string()) return type_error("user", "a string");
  if (present(body, "include")) {
    const json& inc = body["include"];
    if (!inc.is_array()) return type_error("include", "an array");
    if (!inc.empty())
      return invalid_request(
          "'include[0]' (" + inc[0].dump() + ") is not offered: hearth adds no extra output data",
          "include", "unsupported_value");
  }
  if (present(body, "truncation") && body["truncation"] != "disabled")
    return invalid_request(
        "'truncation' must be \"disabled\": hearth never drops input (a prompt beyond the "
        "context is a 400)",
        "truncation", "unsupported_value");
  if (present(body, "background") && body["background"] != false)
    return invalid_request("'background' must be false: background responses are not supported",
                           "background", "unsupported_value");
  return std::nullopt;
}

}  // namespace

ApiError responses_field_names(ApiError e) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"response_format.json_schema.", "text.format."},
      {"response_format", "text.format"},
      {"max_tokens", "max_output_tokens"},
      {"messages", "input"},
  };
  if (e.param.rfind("tools[", 0) == 0 || e.param.rfind("tool_choice", 0) == 0) {
    replace_all(e.param, ".function.", ".");
    replace_all(e.message, ".function.", ".");
  }
  for (const auto& [from, to] : kNames) {
    if (e.param.rfind(from, 0) != 0) continue;
    e.param.replace(0, std::string(from).size(), to);
    replace_all(e.message, from, to);
    break;
  }
  return e;
}

std::optional<ApiError> parse_responses_request(const json& body, const std::string& raw_body,
                                                ResponsesRequest& out) {
  TextRequest& tr = out.text;
  tr.is_chat = true;
  tr.prompt_field = "input";
  if (auto e = check_request_fields(body, kResponsesApi)) return e;
  if (auto e = parse_common_fields(body, tr, /*openai=*/true)) return e;
  if (auto e = parse_options(body, out)) return e;
  if (auto e = parse_text(body, tr.sampling)) return e;
  if (auto e = parse_tools(body, tr)) return e;
  if (auto e = parse_reasoning(body, tr)) return e;
  if (auto e = parse_input(body, out.input)) return e;
  keep_responses_tool_order(raw_body, tr);
  json& echo = out.echo;
  echo["instructions"] = out.instructions ? json(*out.instructions) : json(nullptr);
  echo["max_output_tokens"] = tr.max_tokens ? json(*tr.max_tokens) : json(nullptr);
  echo["metadata"] = present(body, "metadata") ? body["metadata"] : json::object();
  echo["parallel_tool_calls"] = tr.parallel_tool_calls;
  echo["previous_response_id"] =
      out.previous_response_id ? json(*out.previous_response_id) : json(nullptr);
  json reasoning = present(body, "reasoning") ? body["reasoning"] : json::object();
  echo["reasoning"] = {{"effort", reasoning.value("effort", json(nullptr))},
                       {"summary", reasoning.value("summary", json(nullptr))}};
  echo["store"] = out.store;
  // As sent (or the default), not the float the sampler holds (0.7f prints 0.699999988).
  auto decimal = [](float v) { return std::round(static_cast<double>(v) * 1e6) / 1e6; };
  echo["temperature"] = decimal(tr.sampling.temperature);
  echo["top_p"] = decimal(tr.sampling.top_p);
  echo["text"] = present(body, "text") && present(body["text"], "format")
                     ? json{{"format", body["text"]["format"]}}
                     : json{{"format", {{"type", "text"}}}};
  echo["tool_choice"] = present(body, "tool_choice") ? body["tool_choice"] : json("auto");
  echo["tools"] = present(body, "tools") ? body["tools"] : json::array();
  echo["truncation"] = "disabled";
  echo["user"] = present(body, "user") ? body["user"] : json(nullptr);
  return std::nullopt;
}

void name_tool_results(std::vector<ChatMessage>& messages) {
  std::map<std::string, std::string> names;  // call id -> function name
  for (ChatMessage& m : messages) {
    for (const ToolCall& c : m.tool_calls) names[c.id] = c.name;
    if (m.role == "tool" && m.name.empty()) {
      auto it = names.find(m.tool_call_id);
      if (it != names.end()) m.name = it->second;
    }
  }
}

}  // namespace hearth::server
