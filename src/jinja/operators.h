// Python's operators on template values: arithmetic, concatenation, comparison, `in`.
#pragma once

#include <string_view>

#include "jinja/value.h"

namespace hearth::jinja {

class Interpreter;

// op: + - * / // % ** ~
Result<Value> binary_op(Interpreter& in, std::string_view op, const Value& l, const Value& r);
// op: == != < > <= >= in notin
Result<bool> compare_op(Interpreter& in, std::string_view op, const Value& l, const Value& r);
// Python's ordering (<) for sort, min, max: numbers, strings, sequences.
Result<int> three_way(Interpreter& in, const Value& l, const Value& r);
// Membership: substring, list element, dict key.
Result<bool> contains(Interpreter& in, const Value& container, const Value& item);
// What a for loop or list() iterates over (dict: keys; str: characters).
Result<List> iterable_items(const Value& v, Interpreter& in);

}  // namespace hearth::jinja
