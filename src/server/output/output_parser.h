// The model output parser: the generated text in, as it streams, and structured deltas
// out: answer text (content), the think block (reasoning), and tool calls. One parser
// for the OpenAI and Anthropic shapes, streaming or not (a non-streaming reply is the
// same deltas collected), so both paths always agree.
//
// Reasoning: a reply that opens with "<think>" (or whose prompt already opened it,
// starts_in_reasoning) is reasoning up to "</think>"; an unclosed block is all
// reasoning. Tool calls: the family's triggers (tool_syntax.h) open a region that is
// held until it is complete, then parsed; a region that does not parse is returned as
// content, byte for byte, so nothing the model wrote is ever lost. Blank text between
// or around calls is dropped when the reply has calls.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "server/output/tool_syntax.h"

namespace hearth::server {

inline constexpr std::string_view kThinkOpen = "<think>";
inline constexpr std::string_view kThinkClose = "</think>";

struct OutputSyntax {
  ToolSyntax tools = ToolSyntax::kNone;  // kNone: no tool call is ever parsed
  bool starts_in_reasoning = false;      // the rendered prompt ends inside "<think>"
  bool parallel_tool_calls = true;       // false: the first call only
};

struct OutputDelta {
  enum class Kind { kContent, kReasoning, kToolCall };
  Kind kind = Kind::kContent;
  std::string text;   // kContent / kReasoning
  int32_t index = 0;  // kToolCall: 0-based index of the call in the reply
  ToolCall call;      // kToolCall: complete (id, name, arguments)
};

class OutputParser {
 public:
  // make_id gives each parsed call its id (calls that carried none).
  OutputParser(OutputSyntax syntax, std::function<std::string()> make_id);

  std::vector<OutputDelta> push(std::string_view text);
  // No more text: what was held back (a partial marker, an open region) comes out.
  std::vector<OutputDelta> finish();

  int32_t tool_call_count() const { return calls_; }

 private:
  enum class Mode { kStart, kContent, kReasoning, kRegion };
  void drain(bool at_end, std::vector<OutputDelta>& out);
  bool step(bool at_end, std::vector<OutputDelta>& out);  // false: wait for more text
  void emit_text(OutputDelta::Kind kind, std::string text, std::vector<OutputDelta>& out);
  void emit_content(std::string text, std::vector<OutputDelta>& out);

  OutputSyntax syntax_;
  std::function<std::string()> make_id_;
  std::vector<ToolTrigger> triggers_;
  Mode mode_ = Mode::kStart;
  ToolTrigger region_trigger_;
  std::string buf_;
  std::string pending_blank_;  // blank content held until it is known whether calls follow
  bool reasoning_done_ = false;
  bool after_call_ = false;  // the blank that follows a call is dropped, not content
  int32_t calls_ = 0;
};

// A whole reply, collected.
struct ParsedOutput {
  std::string content;
  std::string reasoning;
  std::vector<ToolCall> calls;
};
void collect(const std::vector<OutputDelta>& deltas, ParsedOutput& out);
ParsedOutput parse_output(const OutputSyntax& syntax, std::string_view text,
                          const std::function<std::string()>& make_id);

}  // namespace hearth::server
