#include "server/tool_request.h"

#include "server/request_parse.h"

namespace hearth::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

std::optional<ApiError> check_tool_name(const json& v, const std::string& field) {
  if (!v.is_string()) return type_error(field, "a string");
  const std::string name = v.get<std::string>();
  if (name.empty() || name.size() > 64) return value_error(field, "must be 1 to 64 characters");
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      return value_error(field, "may hold only letters, digits, '_', '-' and '.'");
  }
  return std::nullopt;
}

std::optional<ApiError> check_choice_names_a_tool(const TextRequest& out,
                                                  const std::string& field) {
  if (out.tool_choice.mode != ToolChoice::Mode::kNamed) return std::nullopt;
  for (const ToolSpec& t : out.tools)
    if (t.name == out.tool_choice.name) return std::nullopt;
  return value_error(field, "names '" + out.tool_choice.name + "', which 'tools' does not declare");
}

std::optional<ApiError> parse_kwargs(const json& body, TextRequest& out) {
  if (present(body, "chat_template_kwargs")) {
    const json& kw = body["chat_template_kwargs"];
    if (!kw.is_object()) return type_error("chat_template_kwargs", "an object");
    for (auto& [k, v] : kw.items()) {
      if (k == "messages" || k == "tools" || k == "add_generation_prompt" || k == "bos_token" ||
          k == "eos_token") {
        return value_error("chat_template_kwargs." + k,
                           "is set by the server and may not be overridden");
      }
      out.template_kwargs[k] = ordered_json::parse(v.dump());
    }
  }
  return std::nullopt;
}

std::optional<ApiError> parse_budget(const json& v, const std::string& field, TextRequest& out) {
  if (!v.is_number_integer()) return type_error(field, "an integer");
  if (v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
    return value_error(field, "must be between 0 and " + std::to_string(INT32_MAX));
  out.thinking_budget = v.get<int64_t>();
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_openai_tool_fields(const json& body, TextRequest& out) {
  if (present(body, "tools")) {
    const json& tools = body["tools"];
    if (!tools.is_array()) return type_error("tools", "an array");
    for (size_t i = 0; i < tools.size(); ++i) {
      const std::string f = "tools[" + std::to_string(i) + "]";
      const json& t = tools[i];
      if (!t.is_object()) return type_error(f, "an object");
      if (!t.contains("type") || t["type"] != "function")
        return value_error(f + ".type", "must be \"function\"");
      if (!t.contains("function") || !t["function"].is_object())
        return type_error(f + ".function", "an object");
      const json& fn = t["function"];
      if (!fn.contains("name"))
        return invalid_request("'" + f + ".function.name' is required", f + ".function.name",
                               "missing_field");
      if (auto e = check_tool_name(fn["name"], f + ".function.name")) return e;
      ToolSpec spec;
      spec.name = fn["name"].get<std::string>();
      if (present(fn, "description")) {
        if (!fn["description"].is_string())
          return type_error(f + ".function.description", "a string");
        spec.description = fn["description"].get<std::string>();
      }
      if (present(fn, "parameters")) {
        if (!fn["parameters"].is_object())
          return type_error(f + ".function.parameters", "an object (a JSON Schema)");
        spec.parameters = ordered_json::parse(fn["parameters"].dump());
      }
      if (present(fn, "strict") && !fn["strict"].is_boolean())
        return type_error(f + ".function.strict", "a boolean");
      // The template sees the function as the caller wrote it (transformers passes it).
      out.tools_json.push_back(ordered_json::parse(t.dump()));
      out.tools.push_back(std::move(spec));
    }
  }
  if (present(body, "tool_choice")) {
    const json& c = body["tool_choice"];
    if (c.is_string()) {
      const std::string s = c.get<std::string>();
      if (s == "auto")
        out.tool_choice.mode = ToolChoice::Mode::kAuto;
      else if (s == "none")
        out.tool_choice.mode = ToolChoice::Mode::kNone;
      else if (s == "required")
        out.tool_choice.mode = ToolChoice::Mode::kRequired;
      else
        return value_error("tool_choice",
                           "must be \"auto\", \"none\", \"required\" or "
                           "{\"type\": \"function\", \"function\": {\"name\": ...}}");
    } else if (c.is_object()) {
      if (!c.contains("type") || c["type"] != "function")
        return value_error("tool_choice.type", "must be \"function\"");
      if (!c.contains("function") || !c["function"].is_object() ||
          !c["function"].contains("name") || !c["function"]["name"].is_string())
        return type_error("tool_choice.function.name", "a string");
      out.tool_choice = {ToolChoice::Mode::kNamed, c["function"]["name"].get<std::string>()};
    } else {
      return type_error("tool_choice", "a string or an object");
    }
    if (out.tools.empty() && (out.tool_choice.mode == ToolChoice::Mode::kRequired ||
                              out.tool_choice.mode == ToolChoice::Mode::kNamed)) {
      return value_error("tool_choice", "requires a tool call, but 'tools' declares none");
    }
    if (auto e = check_choice_names_a_tool(out, "tool_choice.function.name")) return e;
  }
  if (present(body, "parallel_tool_calls")) {
    if (!body["parallel_tool_calls"].is_boolean())
      return type_error("parallel_tool_calls", "a boolean");
    out.parallel_tool_calls = body["parallel_tool_calls"].get<bool>();
  }
  if (auto e = parse_kwargs(body, out)) return e;
  if (present(body, "enable_thinking")) {
    if (!body["enable_thinking"].is_boolean()) return type_error("enable_thinking", "a boolean");
    out.template_kwargs["enable_thinking"] = body["enable_thinking"].get<bool>();
  }
  if (present(body, "thinking_budget_tokens")) {
    if (auto e = parse_budget(body["thinking_budget_tokens"], "thinking_budget_tokens", out))
      return e;
  }
  return std::nullopt;
}

std::optional<ApiError> parse_anthropic_tool_fields(const json& body, TextRequest& out) {
  if (present(body, "tools")) {
    const json& tools = body["tools"];
    if (!tools.is_array()) return type_error("tools", "an array");
    for (size_t i = 0; i < tools.size(); ++i) {
      const std::string f = "tools[" + std::to_string(i) + "]";
      const json& t = tools[i];
      if (!t.is_object()) return type_error(f, "an object");
      if (present(t, "type") && t["type"] != "custom")
        return value_error(f + ".type", "must be \"custom\" (server tools are not supported)");
      if (!t.contains("name"))
        return invalid_request("'" + f + ".name' is required", f + ".name", "missing_field");
      if (auto e = check_tool_name(t["name"], f + ".name")) return e;
      if (!t.contains("input_schema") || !t["input_schema"].is_object())
        return type_error(f + ".input_schema", "an object (a JSON Schema)");
      ToolSpec spec;
      spec.name = t["name"].get<std::string>();
      if (present(t, "description")) {
        if (!t["description"].is_string()) return type_error(f + ".description", "a string");
        spec.description = t["description"].get<std::string>();
      }
      spec.parameters = ordered_json::parse(t["input_schema"].dump());
      ordered_json fn = {{"name", spec.name}};
      if (!spec.description.empty()) fn["description"] = spec.description;
      fn["parameters"] = spec.parameters;
      out.tools_json.push_back({{"type", "function"}, {"function", fn}});
      out.tools.push_back(std::move(spec));
    }
  }
  if (present(body, "tool_choice")) {
    const json& c = body["tool_choice"];
    if (!c.is_object() || !c.contains("type") || !c["type"].is_string())
      return type_error("tool_choice", "an object with a 'type'");
    const std::string type = c["type"].get<std::string>();
    if (type == "auto")
      out.tool_choice.mode = ToolChoice::Mode::kAuto;
    else if (type == "any")
      out.tool_choice.mode = ToolChoice::Mode::kRequired;
    else if (type == "none")
      out.tool_choice.mode = ToolChoice::Mode::kNone;
    else if (type == "tool") {
      if (!c.contains("name") || !c["name"].is_string())
        return type_error("tool_choice.name", "a string");
      out.tool_choice = {ToolChoice::Mode::kNamed, c["name"].get<std::string>()};
    } else {
      return value_error("tool_choice.type", "must be \"auto\", \"any\", \"tool\" or \"none\"");
    }
    if (present(c, "disable_parallel_tool_use")) {
      if (!c["disable_parallel_tool_use"].is_boolean())
        return type_error("tool_choice.disable_parallel_tool_use", "a boolean");
      out.parallel_tool_calls = !c["disable_parallel_tool_use"].get<bool>();
    }
    if (out.tools.empty() && (out.tool_choice.mode == ToolChoice::Mode::kRequired ||
                              out.tool_choice.mode == ToolChoice::Mode::kNamed)) {
      return value_error("tool_choice", "requires a tool call, but 'tools' declares none");
    }
    if (auto e = check_choice_names_a_tool(out, "tool_choice.name")) return e;
  }
  if (present(body, "thinking")) {
    const json& t = body["thinking"];
    if (!t.is_object() || !t.contains("type") || !t["type"].is_string())
      return type_error("thinking", "an object with a 'type'");
    const std::string type = t["type"].get<std::string>();
    if (type == "enabled") {
      if (!t.contains("budget_tokens"))
        return invalid_request("'thinking.budget_tokens' is required", "thinking.budget_tokens",
                               "missing_field");
      if (auto e = parse_budget(t["budget_tokens"], "thinking.budget_tokens", out)) return e;
      if (out.max_tokens && *out.thinking_budget >= *out.max_tokens)
        return value_error("thinking.budget_tokens", "must be less than 'max_tokens'");
      out.template_kwargs["enable_thinking"] = true;
    } else if (type == "disabled") {
      out.template_kwargs["enable_thinking"] = false;
    } else {
      return value_error("thinking.type", "must be \"enabled\" or \"disabled\"");
    }
  }
  return parse_kwargs(body, out);
}

void keep_tool_key_order(const std::string& raw_body, bool anthropic, TextRequest& out) {
  if (out.tools.empty()) return;
  const ordered_json body = ordered_json::parse(raw_body, nullptr, false);
  if (body.is_discarded() || !body.contains("tools") || !body["tools"].is_array() ||
      body["tools"].size() != out.tools.size())
    return;
  const ordered_json& tools = body["tools"];
  for (size_t i = 0; i < tools.size(); ++i) {
    if (!anthropic) {
      out.tools_json[i] = tools[i];
      if (tools[i]["function"].contains("parameters"))
        out.tools[i].parameters = tools[i]["function"]["parameters"];
    } else {
      out.tools[i].parameters = tools[i]["input_schema"];
      out.tools_json[i]["function"]["parameters"] = tools[i]["input_schema"];
    }
  }
}

std::optional<ApiError> parse_openai_tool_calls(const json& calls, const std::string& field,
                                                std::vector<ToolCall>& out) {
  if (!calls.is_array()) return type_error(field, "an array");
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    const json& c = calls[i];
    if (!c.is_object()) return type_error(f, "an object");
    if (present(c, "type") && c["type"] != "function")
      return value_error(f + ".type", "must be \"function\"");
    if (!c.contains("function") || !c["function"].is_object())
      return type_error(f + ".function", "an object");
    const json& fn = c["function"];
    if (!fn.contains("name") || !fn["name"].is_string())
      return type_error(f + ".function.name", "a string");
    ToolCall call;
    call.name = fn["name"].get<std::string>();
    if (present(c, "id")) {
      if (!c["id"].is_string()) return type_error(f + ".id", "a string");
      call.id = c["id"].get<std::string>();
    }
    if (!present(fn, "arguments")) {
      call.arguments = "{}";
    } else if (fn["arguments"].is_string()) {
      call.arguments = fn["arguments"].get<std::string>();
    } else if (fn["arguments"].is_object()) {
      call.arguments = ordered_json::parse(fn["arguments"].dump()).dump();
    } else {
      return type_error(f + ".function.arguments", "a string of JSON (or an object)");
    }
    out.push_back(std::move(call));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_anthropic_blocks(const json& content, const std::string& role,
                                               const std::string& field,
                                               std::vector<ChatMessage>& out) {
  ChatMessage msg{role, ""};
  std::vector<ChatMessage> results;  // tool_result blocks, before the user's own text
  bool has_text = false;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    const json& b = content[i];
    if (!b.is_object()) return type_error(f, "an object");
    if (!b.contains("type") || !b["type"].is_string()) return type_error(f + ".type", "a string");
    const std::string type = b["type"].get<std::string>();
    if (type == "text") {
      if (!b.contains("text") || !b["text"].is_string()) return type_error(f + ".text", "a string");
      msg.content += b["text"].get<std::string>();
      has_text = true;
    } else if (type == "tool_use" && role == "assistant") {
      if (!b.contains("id") || !b["id"].is_string()) return type_error(f + ".id", "a string");
      if (!b.contains("name") || !b["name"].is_string()) return type_error(f + ".name", "a string");
      if (!b.contains("input") || !b["input"].is_object())
        return type_error(f + ".input", "an object");
      msg.tool_calls.push_back({b["id"].get<std::string>(), b["name"].get<std::string>(),
                                ordered_json::parse(b["input"].dump()).dump()});
    } else if (type == "tool_result" && role == "user") {
      if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string())
        return type_error(f + ".tool_use_id", "a string");
      ChatMessage r{"tool", ""};
      r.tool_call_id = b["tool_use_id"].get<std::string>();
      if (present(b, "content")) {
        const json& c = b["content"];
        if (c.is_string()) {
          r.content = c.get<std::string>();
        } else if (c.is_array()) {
          for (size_t j = 0; j < c.size(); ++j) {
            const std::string cf = f + ".content[" + std::to_string(j) + "]";
            if (!c[j].is_object() || c[j].value("type", "") != "text")
              return value_error(cf + ".type", "must be \"text\"");
            if (!c[j].contains("text") || !c[j]["text"].is_string())
              return type_error(cf + ".text", "a string");
            r.content += c[j]["text"].get<std::string>();
          }
        } else {
          return type_error(f + ".content", "a string or an array of text blocks");
        }
      }
      if (present(b, "is_error")) {
        if (!b["is_error"].is_boolean()) return type_error(f + ".is_error", "a boolean");
        if (b["is_error"].get<bool>()) r.content = "Error: " + r.content;
      }
      results.push_back(std::move(r));
    } else if (type == "thinking" && role == "assistant") {
      if (!b.contains("thinking") || !b["thinking"].is_string())
        return type_error(f + ".thinking", "a string");
      msg.reasoning_content += b["thinking"].get<std::string>();  // the template decides
    } else if (type == "redacted_thinking" && role == "assistant") {
      // Encrypted by Anthropic's servers: nothing a template could replay.
    } else {
      return value_error(f + ".type", role == "assistant"
                                          ? "must be text, tool_use, thinking or redacted_thinking"
                                          : "must be text or tool_result");
    }
  }
  for (auto& r : results) out.push_back(std::move(r));
  if (role == "assistant") {
    msg.content_absent = !has_text && !msg.tool_calls.empty();  // Anthropic has no null
    out.push_back(std::move(msg));
  } else if (has_text || results.empty()) {
    out.push_back(std::move(msg));
  }
  return std::nullopt;
}

}  // namespace hearth::server
