// The tool-call syntaxes models write, one per model family, and how each is recognised:
// the chat template says which family a model is (its tool-call markers), and each
// family's calls are cut out of the generated text by its own region parser.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::server {

enum class ToolSyntax {
  kNone,        // never parse tool calls (no tools, tool_choice none)
  kHermes,      // Hermes / Qwen: <tool_call>{"name":..,"arguments":..}</tool_call>
  kLlama3Json,  // Llama 3.x: {"name":..,"parameters":..} or <|python_tag|>{...}
  kMistral,     // [TOOL_CALLS][{"name":..,"arguments":..}, ...]
  kDeepSeek,  // <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME ```json ...
  kPhi4,      // Phi-4-mini: functools[{...}] or <|tool_call|>[...]<|/tool_call|>
  kPythonic,  // [func(a=1, b="x"), ...] (Llama 3.2, Gemma 3, LFM2 <|tool_call_start|>)
  kGlm,       // <tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>
};

const char* tool_syntax_name(ToolSyntax syntax);
std::optional<ToolSyntax> tool_syntax_from_name(std::string_view name);

// The family whose call syntax the template teaches or replays (its markers), Hermes
// for a template that mentions tools without any known marker, kNone for a template that
// never references `tools`.
ToolSyntax detect_tool_syntax(std::string_view chat_template);

// Whether the template can express tools at all (it reads the `tools` variable).
bool template_supports_tools(std::string_view chat_template);

// One parsed call. arguments is JSON text (an object), as OpenAI's function.arguments.
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

// A marker that opens a tool-call region in the generated text.
struct ToolTrigger {
  std::string text;
  bool at_start_only = false;  // only as the first non-blank text of the reply ("{", "[")
};
std::vector<ToolTrigger> tool_triggers(ToolSyntax syntax);

// The outcome of parsing a region that starts with a trigger.
struct RegionParse {
  enum class State { kNeedMore, kDone, kInvalid } state = State::kNeedMore;
  size_t consumed = 0;  // kDone / kInvalid: bytes of the region (from the trigger)
  std::vector<ToolCall> calls;
};

// Parses the region at the start of `text` (which begins with `trigger`). at_end: no
// more text will come, so an unterminated region is parsed as it is or is invalid.
RegionParse parse_tool_region(ToolSyntax syntax, const ToolTrigger& trigger, std::string_view text,
                              bool at_end);

}  // namespace hearth::server
