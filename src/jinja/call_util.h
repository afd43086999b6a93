// Argument helpers shared by the builtins.
#pragma once

#include <string>
#include <string_view>

#include "jinja/interpreter.h"
#include "jinja/value.h"

namespace hearth::jinja {

inline const Value* arg(const CallArgs& a, size_t pos, std::string_view name) {
  const Value* v = a.get(pos, name);
  if (v && v->is_undefined()) return nullptr;
  return v;
}

inline Result<int64_t> int_arg(Interpreter& in, const CallArgs& a, size_t pos,
                               std::string_view name, int64_t dflt) {
  const Value* v = arg(a, pos, name);
  if (!v || v->is_none()) return dflt;
  if (!v->is_integral()) {
    return in.error(a.line, a.column,
                    std::string("argument '")
                        .append(name)
                        .append("' must be an integer, not ")
                        .append(kind_name(*v)));
  }
  return v->as_int();
}

inline bool bool_arg(const CallArgs& a, size_t pos, std::string_view name, bool dflt) {
  const Value* v = arg(a, pos, name);
  return v ? truthy(*v) : dflt;
}

inline Result<const Value*> str_arg(Interpreter& in, const CallArgs& a, size_t pos,
                                    std::string_view name, bool required) {
  const Value* v = arg(a, pos, name);
  if (!v || v->is_none()) {
    if (required) {
      return in.error(a.line, a.column,
                      std::string("missing required argument '").append(name).append("'"));
    }
    return static_cast<const Value*>(nullptr);
  }
  if (!v->is_string()) {
    return in.error(
        a.line, a.column,
        std::string("argument '").append(name).append("' must be str, not ").append(kind_name(*v)));
  }
  return v;
}

}  // namespace hearth::jinja
