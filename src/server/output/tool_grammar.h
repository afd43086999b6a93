// What a grammar must enforce so that a model's tool calls always parse: the JSON Schema
// of the allowed calls (per the declared tools and tool_choice) in the family's shape,
// and the text around it. The grammar-constrained sampler (SamplingOptions::grammar,
// grammar_triggers, grammar::json_schema_to_gbnf) turns this into a grammar: lazy (free
// text until `trigger`) for tool_choice auto, from the first token for required / named.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hearth/status.h"
#include "server/output/tool_spec.h"
#include "server/output/tool_syntax.h"

namespace hearth::server {

struct ToolGrammarSpec {
  nlohmann::ordered_json schema;  // the JSON value written between prefix and suffix
  std::string trigger;            // the text that starts a call (lazy grammars wait for it)
  std::string prefix;             // written before the JSON (starts with trigger)
  std::string suffix;             // written after it ("" when the family has no closer)
  bool lazy = true;               // tool_choice auto: the model may answer in text instead
};

// nullopt when no grammar applies: tool_choice none, no tools, or a family whose calls
// are not JSON (DeepSeek's fenced blocks, pythonic calls, GLM XML), whose calls are parsed
// from text only. A named choice that no tool declares is the caller's error, checked
// at parse time.
std::optional<ToolGrammarSpec> tool_call_grammar(ToolSyntax syntax,
                                                 const std::vector<ToolSpec>& tools,
                                                 const ToolChoice& choice, bool parallel);

// The GBNF grammar of a spec (for SamplingOptions::grammar): the prefix, the JSON value
// under the spec's schema, the suffix; with `repeat` (parallel calls of a family with a
// closing suffix) one or more such calls separated by whitespace.
Result<std::string> tool_call_gbnf(const ToolGrammarSpec& spec, bool repeat);

}  // namespace hearth::server
