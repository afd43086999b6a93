// Jinja2's builtin tests (`x is defined`, `x is string`, `x is divisibleby 3`, ...).
#include "jinja/builtins.h"
#include "jinja/call_util.h"
#include "jinja/operators.h"

namespace hearth::jinja {
namespace {

using Test = Result<bool> (*)(Interpreter&, const Value&, CallArgs&);

Result<const Value*> other(Interpreter& in, CallArgs& a) {
  const Value* o = a.get(0, "other");
  if (!o) return in.error(a.line, a.column, "the test needs an argument");
  return o;
}

Result<bool> t_defined(Interpreter&, const Value& v, CallArgs&) {
  return !v.is_undefined();
}
Result<bool> t_undefined(Interpreter&, const Value& v, CallArgs&) {
  return v.is_undefined();
}
Result<bool> t_none(Interpreter&, const Value& v, CallArgs&) {
  return v.is_none();
}
Result<bool> t_boolean(Interpreter&, const Value& v, CallArgs&) {
  return v.kind() == Kind::kBool;
}
Result<bool> t_true(Interpreter&, const Value& v, CallArgs&) {
  return v.kind() == Kind::kBool && v.as_bool();
}
Result<bool> t_false(Interpreter&, const Value& v, CallArgs&) {
  return v.kind() == Kind::kBool && !v.as_bool();
}
Result<bool> t_integer(Interpreter&, const Value& v, CallArgs&) {
  return v.kind() == Kind::kInt;
}
Result<bool> t_float(Interpreter&, const Value& v, CallArgs&) {
  return v.kind() == Kind::kFloat;
}
Result<bool> t_number(Interpreter&, const Value& v, CallArgs&) {
  return v.is_number();
}
Result<bool> t_string(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string();
}
Result<bool> t_mapping(Interpreter&, const Value& v, CallArgs&) {
  return v.is_mapping();
}
Result<bool> t_iterable(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() || v.is_sequence() || v.is_mapping() || v.is_undefined();
}
Result<bool> t_sequence(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() || v.is_sequence() || v.is_mapping() || v.is_undefined();
}
Result<bool> t_callable(Interpreter&, const Value& v, CallArgs&) {
  return v.is_callable();
}
Result<bool> t_escaped(Interpreter&, const Value&, CallArgs&) {
  return false;
}
Result<bool> t_lower(Interpreter&, const Value& v, CallArgs&) {
  const std::string s = to_str(v);
  bool cased = false;
  for (char c : s) {
    if (c >= 'A' && c <= 'Z') return false;
    cased = cased || (c >= 'a' && c <= 'z');
  }
  return cased;
}
Result<bool> t_upper(Interpreter&, const Value& v, CallArgs&) {
  const std::string s = to_str(v);
  bool cased = false;
  for (char c : s) {
    if (c >= 'a' && c <= 'z') return false;
    cased = cased || (c >= 'A' && c <= 'Z');
  }
  return cased;
}
Result<bool> parity(Interpreter& in, const Value& v, bool even) {
  if (!v.is_integral()) {
    if (v.kind() == Kind::kFloat) {
      const double m = std::fmod(v.as_double(), 2.0);
      return even ? m == 0 : m != 0;
    }
    return in.error(
        in.line(), in.column(),
        std::string("unsupported operand type(s) for %: '") + kind_name(v) + "' and 'int'");
  }
  return (v.as_int() % 2 == 0) == even;
}
Result<bool> t_even(Interpreter& in, const Value& v, CallArgs&) {
  return parity(in, v, true);
}
Result<bool> t_odd(Interpreter& in, const Value& v, CallArgs&) {
  return parity(in, v, false);
}
Result<bool> t_divisibleby(Interpreter& in, const Value& v, CallArgs& a) {
  HEARTH_ASSIGN_OR_RETURN(const Value* o, other(in, a));
  HEARTH_ASSIGN_OR_RETURN(Value m, binary_op(in, "%", v, *o));
  return !truthy(m);
}
Result<bool> cmp(Interpreter& in, const Value& v, CallArgs& a, std::string_view op) {
  HEARTH_ASSIGN_OR_RETURN(const Value* o, other(in, a));
  return compare_op(in, op, v, *o);
}
Result<bool> t_eq(Interpreter& in, const Value& v, CallArgs& a) {
  return cmp(in, v, a, "==");
}
Result<bool> t_ne(Interpreter& in, const Value& v, CallArgs& a) {
  return cmp(in, v, a, "!=");
}
Result<bool> t_lt(Interpreter& in, const Value& v, CallArgs& a) {
  return cmp(in, v, a, "<");
}
Result<bool> t_le(Interpreter& in, const Value& v, CallArgs& a) {
  return cmp(in, v, a, "<=");
}
Result<bool> t_gt(Interpreter& in, const Value& v, CallArgs& a) {
  return cmp(in, v, a, ">");
}
Result<bool> t_ge(Interpreter& in, const Value& v, CallArgs& a) {
  return cmp(in, v, a, ">=");
}
Result<bool> t_in(Interpreter& in, const Value& v, CallArgs& a) {
  HEARTH_ASSIGN_OR_RETURN(const Value* o, other(in, a));
  return contains(in, *o, v);
}
Result<bool> t_sameas(Interpreter& in, const Value& v, CallArgs& a) {
  HEARTH_ASSIGN_OR_RETURN(const Value* o, other(in, a));
  if (v.kind() != o->kind()) return false;
  if (v.identity() || o->identity()) return v.identity() == o->identity();
  return equals(v, *o);
}
Result<bool> t_filter(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() && is_filter_name(v.str());
}
Result<bool> t_test(Interpreter&, const Value& v, CallArgs&) {
  return v.is_string() && is_test_name(v.str());
}

struct Entry {
  const char* name;
  Test fn;
};

const Entry kTests[] = {
    {"boolean", t_boolean},
    {"callable", t_callable},
    {"defined", t_defined},
    {"divisibleby", t_divisibleby},
    {"eq", t_eq},
    {"equalto", t_eq},
    {"escaped", t_escaped},
    {"even", t_even},
    {"false", t_false},
    {"filter", t_filter},
    {"float", t_float},
    {"ge", t_ge},
    {"gt", t_gt},
    {"greaterthan", t_gt},
    {"in", t_in},
    {"integer", t_integer},
    {"iterable", t_iterable},
    {"le", t_le},
    {"lower", t_lower},
    {"lessthan", t_lt},
    {"lt", t_lt},
    {"mapping", t_mapping},
    {"ne", t_ne},
    {"none", t_none},
    {"number", t_number},
    {"odd", t_odd},
    {"sameas", t_sameas},
    {"sequence", t_sequence},
    {"string", t_string},
    {"test", t_test},
    {"true", t_true},
    {"undefined", t_undefined},
    {"upper", t_upper},
    {"==", t_eq},
    {"!=", t_ne},
    {"<", t_lt},
    {"<=", t_le},
    {">", t_gt},
    {">=", t_ge},
};

}  // namespace

bool is_test_name(std::string_view name) {
  for (const auto& e : kTests) {
    if (name == e.name) return true;
  }
  return false;
}

Result<bool> apply_test(Interpreter& in, std::string_view name, const Value& input,
                        CallArgs& args) {
  for (const auto& e : kTests) {
    if (name == e.name) return e.fn(in, input, args);
  }
  return in.error(args.line, args.column, "no test named '" + std::string(name) + "'");
}

}  // namespace hearth::jinja
