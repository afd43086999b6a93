// Jinja2's lexer with the chat-template environment's settings: trim_blocks and
// lstrip_blocks on, keep_trailing_newline off, newlines normalised to "\n", `{%-`/`-%}`
// whitespace control, `{%+`/`+%}` overrides, comments and {% raw %} blocks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hearth/status.h"

namespace hearth::jinja {

enum class Tok : uint8_t {
  kData,        // template text
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,  // text holds the decoded value
  kInt,
  kFloat,
  kOp,  // text holds the operator
  kEof,
};

struct Token {
  Tok type = Tok::kEof;
  std::string text;
  int line = 1;
  int column = 1;
};

// "line L, column C: what" — the prefix every template error carries.
std::string at(int line, int column, std::string_view what);

Result<std::vector<Token>> tokenize(std::string_view source);

}  // namespace hearth::jinja
