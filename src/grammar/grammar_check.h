// Checks on a compiled grammar that the matcher relies on.
#pragma once

#include "grammar/grammar_data.h"
#include "hearth/status.h"

namespace hearth::grammar {

// InvalidArgument naming a rule that can reach itself without consuming a character
// (left recursion): following it would never end.
Status check_left_recursion(const GrammarData& g);

}  // namespace hearth::grammar
