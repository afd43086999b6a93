// Jinja2's grammar over the lexer's tokens: statements (if, for, set, macro, call,
// filter, with, break/continue, generation) and the expression language.
#pragma once

#include <string_view>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace hearth::jinja {

// Nesting deeper than this (brackets, operators, blocks) is a syntax error, so a hostile
// template cannot exhaust the stack.
inline constexpr int kMaxParseDepth = 200;

Result<Body> parse(std::vector<Token> tokens);

}  // namespace hearth::jinja
