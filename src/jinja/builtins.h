// Jinja2's builtin filters, tests, globals and the Python methods of str, dict and list
// that the sandbox lets templates call.
#pragma once

#include <string>
#include <string_view>

#include "jinja/value.h"

namespace hearth::jinja {

class Interpreter;

// The name a filter block's or block set's body is bound to while its filters run (not
// a name a template can write).
inline constexpr const char* kBodyHole = "\x01body";

bool is_filter_name(std::string_view name);
bool is_test_name(std::string_view name);

Result<Value> apply_filter(Interpreter& in, std::string_view name, const Value& input,
                           CallArgs& args);
Result<bool> apply_test(Interpreter& in, std::string_view name, const Value& input, CallArgs& args);
// `obj.name` when obj is a str, dict or list and name one of its methods: a bound method.
// nullopt-like: an Undefined value when there is no such method.
Value method(const Value& obj, std::string_view name);
// Globals: range, dict, namespace, raise_exception, strftime_now, joiner, cycler, lipsum.
Value global_function(std::string_view name);

// tojson as transformers defines it: json.dumps(x, ensure_ascii, indent, separators,
// sort_keys); indent < 0 means None.
struct JsonOptions {
  bool ensure_ascii = false;
  int indent = -1;
  std::string item_sep = ", ";
  std::string key_sep = ": ";
  bool sort_keys = false;
};
Result<std::string> to_json(const Value& v, const JsonOptions& opts);

}  // namespace hearth::jinja
