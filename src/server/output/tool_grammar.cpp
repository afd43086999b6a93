#include "server/output/tool_grammar.h"

#include "grammar/gbnf_text.h"
#include "hearth/grammar/json_schema.h"

namespace hearth::server {
namespace {

using nlohmann::ordered_json;

// One call object: {"name": <const>, <args_key>: <the tool's parameters>}.
ordered_json call_schema(const ToolSpec& tool, const char* args_key) {
  ordered_json params = tool.parameters.is_object() && !tool.parameters.empty()
                            ? tool.parameters
                            : ordered_json{{"type", "object"}};
  return {{"type", "object"},
          {"properties", {{"name", {{"const", tool.name}}}, {args_key, params}}},
          {"required", {"name", args_key}},
          {"additionalProperties", false}};
}

}  // namespace

std::optional<ToolGrammarSpec> tool_call_grammar(ToolSyntax syntax,
                                                 const std::vector<ToolSpec>& tools,
                                                 const ToolChoice& choice, bool parallel) {
  if (choice.mode == ToolChoice::Mode::kNone || tools.empty()) return std::nullopt;
  const char* args_key = syntax == ToolSyntax::kLlama3Json ? "parameters" : "arguments";
  ordered_json alternatives = ordered_json::array();
  for (const ToolSpec& t : tools) {
    if (choice.mode == ToolChoice::Mode::kNamed && t.name != choice.name) continue;
    alternatives.push_back(call_schema(t, args_key));
  }
  if (alternatives.empty()) return std::nullopt;
  ordered_json one =
      alternatives.size() == 1 ? alternatives[0] : ordered_json{{"anyOf", alternatives}};
  const bool lazy = choice.mode == ToolChoice::Mode::kAuto;
  ordered_json list = {{"type", "array"}, {"items", one}, {"minItems", 1}};
  if (!parallel) list["maxItems"] = 1;
  switch (syntax) {
    case ToolSyntax::kHermes:
      return ToolGrammarSpec{one, "<tool_call>", "<tool_call>\n", "\n</tool_call>", lazy};
    case ToolSyntax::kLlama3Json:
      return ToolGrammarSpec{one, "{", "", "", lazy};
    case ToolSyntax::kMistral:
      return ToolGrammarSpec{list, "[TOOL_CALLS]", "[TOOL_CALLS]", "", lazy};
    case ToolSyntax::kPhi4:
      return ToolGrammarSpec{list, "functools", "functools", "", lazy};
    case ToolSyntax::kNone:
    case ToolSyntax::kDeepSeek:
    case ToolSyntax::kPythonic:
    case ToolSyntax::kGlm:
      return std::nullopt;
  }
  return std::nullopt;
}

Result<std::string> tool_call_gbnf(const ToolGrammarSpec& spec, bool repeat) {
  HEARTH_ASSIGN_OR_RETURN(std::string call, grammar::json_schema_rules(spec.schema, "tool-call"));
  std::string item = grammar::gbnf_literal(spec.prefix);
  item.append(" tool-call");
  if (!spec.suffix.empty()) item.append(" ").append(grammar::gbnf_literal(spec.suffix));
  std::string out;
  if (repeat && !spec.suffix.empty()) {
    out.append("root ::= tool-item (ws tool-item)*\ntool-item ::= ").append(item);
  } else {
    out.append("root ::= ").append(item);
  }
  out.append("\n").append(call).append(grammar::json_schema_primitives());
  return out;
}

}  // namespace hearth::server
