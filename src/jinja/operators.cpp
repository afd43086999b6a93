#include "jinja/operators.h"

#include <algorithm>
#include <cmath>

#include "jinja/interpreter.h"

namespace hearth::jinja {
namespace {

Status type_error(Interpreter& in, std::string_view op, const Value& l, const Value& r) {
  return in.error(in.line(), in.column(),
                  std::string("unsupported operand type(s) for ")
                      .append(op)
                      .append(": '")
                      .append(kind_name(l))
                      .append("' and '")
                      .append(kind_name(r))
                      .append("'"));
}

Status undefined_error(Interpreter& in, const Value& u) {
  return in.error(in.line(), in.column(), undefined_message(u));
}

Result<Value> repeat(Interpreter& in, const Value& seq, int64_t times) {
  // Clamped so size * times cannot overflow: any non-empty sequence times 2^30 is over
  // every limit anyway.
  times = std::clamp<int64_t>(times, 0, int64_t{1} << 30);
  if (seq.is_string() && seq.str().empty()) return Value::string("");
  if (seq.is_sequence() && seq.items().empty()) return seq;
  if (seq.is_string()) {
    HEARTH_RETURN_IF_ERROR(
        in.check_size(seq.str().size() * static_cast<size_t>(times), in.line(), in.column()));
    RangedText out;
    for (int64_t i = 0; i < times; ++i) out.append(seq);
    return out.take();
  }
  const size_t n = seq.items().size() * static_cast<size_t>(times);
  HEARTH_RETURN_IF_ERROR(in.check_items(n, in.line(), in.column()));
  HEARTH_RETURN_IF_ERROR(in.count_steps(n, in.line(), in.column()));
  List out;
  for (int64_t i = 0; i < times; ++i) {
    out.insert(out.end(), seq.items().begin(), seq.items().end());
  }
  return seq.kind() == Kind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

// printf-style `"%s" % x`: %s %r %d %i %f %x %%.
Result<Value> percent_format(Interpreter& in, const Value& fmt, const Value& arg) {
  List args = arg.kind() == Kind::kTuple ? arg.items() : List{arg};
  size_t next = 0;
  std::string out;
  const std::string& f = fmt.str();
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out.push_back(f[i]);
      continue;
    }
    if (++i >= f.size()) return in.error(in.line(), in.column(), "incomplete format");
    std::string spec;
    while (i < f.size() &&
           std::string_view("-+ #0123456789.").find(f[i]) != std::string_view::npos) {
      spec.push_back(f[i++]);
    }
    if (i >= f.size()) return in.error(in.line(), in.column(), "incomplete format");
    const char c = f[i];
    if (c == '%') {
      out.push_back('%');
      continue;
    }
    if (next >= args.size()) {
      return in.error(in.line(), in.column(), "not enough arguments for format string");
    }
    const Value& a = args[next++];
    char buf[128];
    if (c == 's') {
      out += to_str(a);
    } else if (c == 'r') {
      out += to_repr(a);
    } else if ((c == 'd' || c == 'i' || c == 'x' || c == 'f' || c == 'e' || c == 'g') &&
               a.is_number()) {
      const std::string pf = "%" + spec +
                             (c == 'd' || c == 'i' ? "lld"
                              : c == 'x'           ? "llx"
                                                   : std::string(1, c));
      if (c == 'd' || c == 'i' || c == 'x') {
        const long long v = a.is_integral() ? a.as_int() : static_cast<long long>(a.as_double());
        std::snprintf(buf, sizeof(buf), pf.c_str(), v);
      } else {
        std::snprintf(buf, sizeof(buf), pf.c_str(), a.as_double());
      }
      out += buf;
    } else {
      return in.error(in.line(), in.column(),
                      std::string("unsupported format character '").append(1, c).append("'"));
    }
  }
  if (next < args.size()) {
    return in.error(in.line(), in.column(), "not all arguments converted during string formatting");
  }
  return derived_string(std::move(out), {&fmt, &arg});
}

double py_floor_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

}  // namespace

Result<Value> binary_op(Interpreter& in, std::string_view op, const Value& l, const Value& r) {
  if (op == "~") {
    RangedText out;
    out.append(l.is_undefined() ? Value::string("") : l);
    out.append(r.is_undefined() ? Value::string("") : r);
    HEARTH_RETURN_IF_ERROR(in.check_size(out.size(), in.line(), in.column()));
    return out.take();
  }
  if (l.is_undefined()) return undefined_error(in, l);
  if (r.is_undefined()) return undefined_error(in, r);
  if (l.is_number() && r.is_number()) {
    const bool ints = l.is_integral() && r.is_integral();
    const int64_t a = l.as_int(), b = r.as_int();
    const double x = l.as_double(), y = r.as_double();
    int64_t res = 0;
    if (op == "+") {
      if (!ints) return Value::number(x + y);
      if (__builtin_add_overflow(a, b, &res))
        return in.error(in.line(), in.column(), "integer overflow");
      return Value::integer(res);
    }
    if (op == "-") {
      if (!ints) return Value::number(x - y);
      if (__builtin_sub_overflow(a, b, &res))
        return in.error(in.line(), in.column(), "integer overflow");
      return Value::integer(res);
    }
    if (op == "*") {
      if (!ints) return Value::number(x * y);
      if (__builtin_mul_overflow(a, b, &res))
        return in.error(in.line(), in.column(), "integer overflow");
      return Value::integer(res);
    }
    if (op == "/") {
      if (y == 0) return in.error(in.line(), in.column(), "division by zero");
      return Value::number(x / y);
    }
    if (op == "//" || op == "%") {
      if (y == 0) {
        return in.error(
            in.line(), in.column(),
            op == "%" ? "integer modulo by zero" : "integer division or modulo by zero");
      }
      if (ints) {
        if (a == INT64_MIN && b == -1) return in.error(in.line(), in.column(), "integer overflow");
        int64_t q = a / b, m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) {
          --q;
          m += b;
        }
        return Value::integer(op == "//" ? q : m);
      }
      if (op == "%") return Value::number(py_floor_mod(x, y));
      return Value::number(std::floor(x / y));
    }
    if (op == "**") {
      if (ints && b >= 0) {
        int64_t acc = 1;
        for (int64_t i = 0; i < b; ++i) {
          if (__builtin_mul_overflow(acc, a, &acc))
            return in.error(in.line(), in.column(), "integer overflow");
          if (acc == 0 || acc == 1) break;
        }
        if (acc == 1 && a == -1) acc = (b % 2) ? -1 : 1;
        return Value::integer(acc);
      }
      if (x == 0 && y < 0)
        return in.error(in.line(), in.column(), "0.0 cannot be raised to a negative power");
      return Value::number(std::pow(x, y));
    }
  }
  if (op == "+") {
    if (l.is_string() && r.is_string()) {
      RangedText out;
      out.append(l);
      out.append(r);
      HEARTH_RETURN_IF_ERROR(in.check_size(out.size(), in.line(), in.column()));
      return out.take();
    }
    if (l.is_sequence() && l.kind() == r.kind()) {
      HEARTH_RETURN_IF_ERROR(
          in.check_items(l.items().size() + r.items().size(), in.line(), in.column()));
      List out = l.items();
      out.insert(out.end(), r.items().begin(), r.items().end());
      HEARTH_RETURN_IF_ERROR(in.count_steps(r.items().size(), in.line(), in.column()));
      return l.kind() == Kind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
    if (l.is_string() || r.is_string()) {
      const Value& other = l.is_string() ? r : l;
      return in.error(in.line(), in.column(),
                      l.is_string() ? std::string("can only concatenate str (not \"") +
                                          kind_name(other) + "\") to str"
                                    : type_error(in, op, l, r).message());
    }
  }
  if (op == "*") {
    if ((l.is_string() || l.is_sequence()) && r.is_integral()) return repeat(in, l, r.as_int());
    if ((r.is_string() || r.is_sequence()) && l.is_integral()) return repeat(in, r, l.as_int());
  }
  if (op == "%" && l.is_string()) return percent_format(in, l, r);
  return type_error(in, op, l, r);
}

Result<int> three_way(Interpreter& in, const Value& l, const Value& r) {
  if (l.is_number() && r.is_number()) {
    if (l.is_integral() && r.is_integral()) {
      return l.as_int() < r.as_int() ? -1 : l.as_int() > r.as_int() ? 1 : 0;
    }
    const double a = l.as_double(), b = r.as_double();
    return a < b ? -1 : a > b ? 1 : 0;
  }
  if (l.is_string() && r.is_string()) {
    const int c = l.str().compare(r.str());  // UTF-8 byte order is code point order
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (l.is_sequence() && l.kind() == r.kind()) {
    const auto& a = l.items();
    const auto& b = r.items();
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (equals(a[i], b[i])) continue;
      return three_way(in, a[i], b[i]);
    }
    return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
  }
  if (l.is_undefined()) return undefined_error(in, l);
  if (r.is_undefined()) return undefined_error(in, r);
  return in.error(in.line(), in.column(),
                  std::string("'<' not supported between instances of '") + kind_name(l) +
                      "' and '" + kind_name(r) + "'");
}

Result<bool> contains(Interpreter& in, const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::kString:
      if (!item.is_string()) {
        if (item.is_undefined()) return undefined_error(in, item);
        return in.error(
            in.line(), in.column(),
            std::string("'in <string>' requires string as left operand, not ") + kind_name(item));
      }
      return container.str().find(item.str()) != std::string::npos;
    case Kind::kList:
    case Kind::kTuple:
      for (const auto& x : container.items()) {
        if (equals(x, item)) return true;
      }
      return false;
    case Kind::kDict:
      return container.find(item) != nullptr;
    case Kind::kUndefined:
      return false;
    default:
      return in.error(
          in.line(), in.column(),
          std::string("argument of type '") + kind_name(container) + "' is not iterable");
  }
}

Result<bool> compare_op(Interpreter& in, std::string_view op, const Value& l, const Value& r) {
  if (op == "==") return equals(l, r);
  if (op == "!=") return !equals(l, r);
  if (op == "in") return contains(in, r, l);
  if (op == "notin") {
    HEARTH_ASSIGN_OR_RETURN(bool c, contains(in, r, l));
    return !c;
  }
  HEARTH_ASSIGN_OR_RETURN(int c, three_way(in, l, r));
  if (op == "<") return c < 0;
  if (op == ">") return c > 0;
  if (op == "<=") return c <= 0;
  return c >= 0;
}

}  // namespace hearth::jinja
