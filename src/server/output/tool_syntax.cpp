#include "server/output/tool_syntax.h"

#include <functional>

#include "server/output/call_text.h"

namespace hearth::server {
namespace {

using nlohmann::ordered_json;
using State = RegionParse::State;

constexpr std::string_view kDeepSeekCallsBegin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view kDeepSeekCallsEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kDeepSeekCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kDeepSeekCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kDeepSeekSep = "<｜tool▁sep｜>";

struct NamedSyntax {
  const char* name;
  ToolSyntax syntax;
};
constexpr NamedSyntax kNames[] = {
    {"none", ToolSyntax::kNone},
    {"hermes", ToolSyntax::kHermes},
    {"llama3-json", ToolSyntax::kLlama3Json},
    {"mistral", ToolSyntax::kMistral},
    {"deepseek", ToolSyntax::kDeepSeek},
    {"phi4", ToolSyntax::kPhi4},
    {"pythonic", ToolSyntax::kPythonic},
    {"glm", ToolSyntax::kGlm},
};

bool has(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

RegionParse need_more() {
  return {};
}
RegionParse invalid(size_t consumed) {
  return {State::kInvalid, consumed, {}};
}
RegionParse parsed(size_t consumed, std::optional<std::vector<ToolCall>> calls) {
  if (!calls || calls->empty()) return invalid(consumed);
  return {State::kDone, consumed, std::move(*calls)};
}

std::string_view trim(std::string_view s) {
  const size_t b = skip_blank(s);
  size_t e = s.size();
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\n' || s[e - 1] == '\r' || s[e - 1] == '\t'))
    --e;
  return s.substr(b, e - b);
}

// A region closed by `close`: the body between the trigger and it goes to parse_body.
// Without the close, the region waits for more text, or at the end parses what it has.
RegionParse delimited(
    std::string_view text, size_t open_len, std::string_view close, bool at_end,
    const std::function<std::optional<std::vector<ToolCall>>(std::string_view)>& parse_body) {
  const size_t end = text.find(close, open_len);
  if (end == std::string_view::npos) {
    if (!at_end) return need_more();
    return parsed(text.size(), parse_body(text.substr(open_len)));
  }
  return parsed(end + close.size(), parse_body(text.substr(open_len, end - open_len)));
}

// A region whose body is one bracketed value right after the trigger.
RegionParse bracketed(
    std::string_view text, size_t open_len, bool python, bool at_end,
    const std::function<std::optional<std::vector<ToolCall>>(std::string_view)>& parse_body) {
  const size_t start = skip_blank(text, open_len);
  if (start >= text.size()) return at_end ? invalid(text.size()) : need_more();
  if (text[start] != '[' && text[start] != '{') return invalid(start);
  const size_t end = bracketed_end(text, start, python);
  if (end == std::string_view::npos) return at_end ? invalid(text.size()) : need_more();
  return parsed(end, parse_body(text.substr(start, end - start)));
}

std::optional<std::vector<ToolCall>> json_calls(std::string_view body) {
  return calls_from_json_text(trim(body));
}

// A bare JSON reply is a call only when it names both the function and its arguments.
std::optional<std::vector<ToolCall>> bare_json_call(std::string_view body) {
  auto v = parse_json(body);
  if (!v || !v->is_object() || !(v->contains("parameters") || v->contains("arguments")))
    return std::nullopt;
  return calls_from_json_text(body);
}

std::optional<std::vector<ToolCall>> glm_call(std::string_view body) {
  const size_t first_key = body.find("<arg_key>");
  std::string_view name = trim(body.substr(0, first_key));
  if (name.empty() || has(name, "<") || has(name, "\n")) return std::nullopt;
  ordered_json args = ordered_json::object();
  size_t pos = first_key;
  while (pos != std::string_view::npos) {
    const size_t kb = pos + 9;  // "<arg_key>"
    const size_t ke = body.find("</arg_key>", kb);
    if (ke == std::string_view::npos) return std::nullopt;
    const size_t vb = body.find("<arg_value>", ke);
    if (vb == std::string_view::npos || !trim(body.substr(ke + 10, vb - ke - 10)).empty())
      return std::nullopt;
    const size_t ve = body.find("</arg_value>", vb);
    if (ve == std::string_view::npos) return std::nullopt;
    const std::string key(trim(body.substr(kb, ke - kb)));
    const std::string_view raw = body.substr(vb + 11, ve - vb - 11);
    auto v = parse_json(raw);
    args[key] = v ? std::move(*v) : ordered_json(std::string(raw));
    pos = body.find("<arg_key>", ve);
    if (pos == std::string_view::npos && !trim(body.substr(ve + 12)).empty()) return std::nullopt;
  }
  return std::vector<ToolCall>{{"", std::string(name), args.dump()}};
}

std::optional<std::vector<ToolCall>> deepseek_calls(std::string_view body) {
  std::vector<ToolCall> calls;
  size_t pos = body.find(kDeepSeekCallBegin);
  if (!trim(body.substr(0, pos == std::string_view::npos ? body.size() : pos)).empty())
    return std::nullopt;
  while (pos != std::string_view::npos) {
    const size_t b = pos + kDeepSeekCallBegin.size();
    size_t e = body.find(kDeepSeekCallEnd, b);
    const std::string_view call = body.substr(b, e == std::string_view::npos ? e : e - b);
    const size_t sep = call.find(kDeepSeekSep);
    if (sep == std::string_view::npos) return std::nullopt;
    std::string_view rest = call.substr(sep + kDeepSeekSep.size());
    const size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) return std::nullopt;
    const std::string_view name = trim(rest.substr(0, nl));
    std::string_view args = trim(rest.substr(nl + 1));
    if (args.starts_with("```json"))
      args.remove_prefix(7);
    else if (args.starts_with("```"))
      args.remove_prefix(3);
    if (args.ends_with("```")) args.remove_suffix(3);
    auto v = parse_json(trim(args));
    if (name.empty() || !v || !v->is_object()) return std::nullopt;
    calls.push_back({"", std::string(name), v->dump()});
    if (e == std::string_view::npos) break;
    pos = body.find(kDeepSeekCallBegin, e);
    const std::string_view between = body.substr(
        e + kDeepSeekCallEnd.size(),
        pos == std::string_view::npos ? std::string_view::npos : pos - e - kDeepSeekCallEnd.size());
    if (!trim(between).empty()) return std::nullopt;
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

// Mistral's newer form: [TOOL_CALLS]name[ARGS]{...}
RegionParse mistral_args_form(std::string_view text, size_t open_len, bool at_end) {
  const size_t args = text.find("[ARGS]", open_len);
  if (args == std::string_view::npos) {
    const bool could_be = text.size() - open_len < 128 && !has(text.substr(open_len), "\n");
    return (!at_end && could_be) ? need_more() : invalid(text.size());
  }
  const std::string name(trim(text.substr(open_len, args - open_len)));
  const size_t start = skip_blank(text, args + 6);
  if (start >= text.size()) return at_end ? invalid(text.size()) : need_more();
  if (text[start] != '{') return invalid(start);
  const size_t end = bracketed_end(text, start, false);
  if (end == std::string_view::npos) return at_end ? invalid(text.size()) : need_more();
  auto v = parse_json(text.substr(start, end - start));
  if (name.empty() || !v || !v->is_object()) return invalid(end);
  return parsed(end, std::vector<ToolCall>{{"", name, v->dump()}});
}

}  // namespace

const char* tool_syntax_name(ToolSyntax syntax) {
  for (const auto& n : kNames)
    if (n.syntax == syntax) return n.name;
  return "none";
}

std::optional<ToolSyntax> tool_syntax_from_name(std::string_view name) {
  for (const auto& n : kNames)
    if (name == n.name) return n.syntax;
  return std::nullopt;
}

bool template_supports_tools(std::string_view chat_template) {
  return has(chat_template, "tools");
}

ToolSyntax detect_tool_syntax(std::string_view t) {
  if (has(t, "<arg_key>")) return ToolSyntax::kGlm;
  if (has(t, kDeepSeekCallsBegin)) return ToolSyntax::kDeepSeek;
  if (has(t, "[TOOL_CALLS]")) return ToolSyntax::kMistral;
  if (has(t, "functools") || has(t, "<|tool_call|>")) return ToolSyntax::kPhi4;
  if (has(t, "<tool_call>")) return ToolSyntax::kHermes;
  if (has(t, "python list") || has(t, "<|tool_list_start|>") || has(t, "<|tool_call_start|>"))
    return ToolSyntax::kPythonic;
  if (has(t, "python_tag") || has(t, "\"parameters\"")) return ToolSyntax::kLlama3Json;
  if (template_supports_tools(t)) return ToolSyntax::kHermes;
  return ToolSyntax::kNone;
}

std::vector<ToolTrigger> tool_triggers(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kNone:
      return {};
    case ToolSyntax::kHermes:
    case ToolSyntax::kGlm:
      return {{"<tool_call>", false}};
    case ToolSyntax::kLlama3Json:
      return {{"<|python_tag|>", false}, {"{", true}};
    case ToolSyntax::kMistral:
      return {{"[TOOL_CALLS]", false}};
    case ToolSyntax::kDeepSeek:
      return {{std::string(kDeepSeekCallsBegin), false}};
    case ToolSyntax::kPhi4:
      return {{"functools", false}, {"<|tool_call|>", false}};
    case ToolSyntax::kPythonic:
      return {{"<|tool_call_start|>", false}, {"[", true}};
  }
  return {};
}

RegionParse parse_tool_region(ToolSyntax syntax, const ToolTrigger& trigger, std::string_view text,
                              bool at_end) {
  const size_t open = trigger.text.size();
  switch (syntax) {
    case ToolSyntax::kNone:
      return invalid(text.size());
    case ToolSyntax::kHermes:
      return delimited(text, open, "</tool_call>", at_end, json_calls);
    case ToolSyntax::kGlm:
      return delimited(text, open, "</tool_call>", at_end, glm_call);
    case ToolSyntax::kLlama3Json:
      if (trigger.text == "{") return bracketed(text, 0, false, at_end, bare_json_call);
      return bracketed(text, open, false, at_end, json_calls);
    case ToolSyntax::kMistral: {
      const size_t start = skip_blank(text, open);
      if (start < text.size() && text[start] != '[' && text[start] != '{')
        return mistral_args_form(text, open, at_end);
      return bracketed(text, open, false, at_end, json_calls);
    }
    case ToolSyntax::kDeepSeek:
      return delimited(text, open, kDeepSeekCallsEnd, at_end, deepseek_calls);
    case ToolSyntax::kPhi4:
      if (trigger.text == "functools") return bracketed(text, open, false, at_end, json_calls);
      // Granite writes no closing marker: then the call runs to the end of the reply.
      return delimited(text, open, "<|/tool_call|>", at_end, json_calls);
    case ToolSyntax::kPythonic:
      if (trigger.text == "[") return bracketed(text, 0, true, at_end, parse_pythonic_calls);
      return delimited(text, open, "<|tool_call_end|>", at_end,
                       [](std::string_view b) { return parse_pythonic_calls(trim(b)); });
  }
  return invalid(text.size());
}

}  // namespace hearth::server
