// Jinja2's builtin filters, with transformers' tojson.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "jinja/builtins.h"
#include "jinja/call_util.h"
#include "jinja/operators.h"
#include "jinja/strings.h"

namespace hearth::jinja {
namespace {

using Filter = Result<Value> (*)(Interpreter&, const Value&, CallArgs&);

Status undefined_error(Interpreter& in, const Value& v) {
  return in.error(in.line(), in.column(), undefined_message(v));
}

// A value as a string value (strings keep their ranges).
Value as_string(const Value& v) {
  return v.is_string() ? v : Value::string(to_str(v));
}

// Item attribute lookup for map / selectattr / sort / join(attribute=): "a.b" or "0".
Result<Value> item_attribute(Interpreter& in, const Value& item, const Value& attribute) {
  if (attribute.is_integral()) {
    if (item.is_sequence()) {
      int64_t i = attribute.as_int();
      const int64_t n = static_cast<int64_t>(item.items().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return item.items()[static_cast<size_t>(i)];
      return Value::undefined();
    }
    if (const Value* v = item.find(attribute)) return *v;
    return Value::undefined();
  }
  const std::string path = to_str(attribute);
  Value cur = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    Value next;
    if (cur.is_mapping() || cur.kind() == Kind::kNamespace) {
      const Value* v = cur.find(part);
      if (v) {
        next = *v;
      } else {
        next = method(cur, part);
      }
    } else if (cur.is_sequence() && !part.empty() &&
               std::all_of(part.begin(), part.end(), ::isdigit)) {
      const size_t i = static_cast<size_t>(std::atoll(part.c_str()));
      if (i < cur.items().size()) next = cur.items()[i];
    } else if (cur.is_undefined()) {
      return undefined_error(in, cur);
    } else {
      next = method(cur, part);
    }
    if (next.is_undefined()) next = Value::undefined(part);
    cur = std::move(next);
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

Result<Value> f_default(Interpreter&, const Value& v, CallArgs& a) {
  const Value* d = a.get(0, "default_value");
  const bool boolean = bool_arg(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !truthy(v))) return d ? *d : Value::literal("");
  return v;
}

Result<Value> f_length(Interpreter& in, const Value& v, CallArgs&) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return Value::integer(0);
    case Kind::kString:
      return Value::integer(static_cast<int64_t>(utf8_length(v.str())));
    case Kind::kList:
    case Kind::kTuple:
      return Value::integer(static_cast<int64_t>(v.items().size()));
    case Kind::kDict:
      return Value::integer(static_cast<int64_t>(v.entries().size()));
    default:
      return in.error(in.line(), in.column(),
                      std::string("object of type '") + kind_name(v) + "' has no len()");
  }
}

Result<Value> f_string(Interpreter&, const Value& v, CallArgs&) {
  return as_string(v);
}

Result<Value> f_safe(Interpreter&, const Value& v, CallArgs&) {
  return as_string(v);
}

Result<Value> f_escape(Interpreter&, const Value& v, CallArgs&) {
  const Value s = as_string(v);
  std::string out;
  for (char c : s.str()) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return derived_string(std::move(out), {&s});
}

Result<Value> f_trim(Interpreter& in, const Value& v, CallArgs& a) {
  const Value s = as_string(v);
  HEARTH_ASSIGN_OR_RETURN(const Value* chars, str_arg(in, a, 0, "chars", false));
  auto [b, e] = strip_bounds(s.str(), chars ? &chars->str() : nullptr, true, true);
  return substring(s, b, e);
}

Result<Value> f_upper(Interpreter&, const Value& v, CallArgs&) {
  const Value s = as_string(v);
  return derived_string(py_upper(s.str()), {&s});
}
Result<Value> f_lower(Interpreter&, const Value& v, CallArgs&) {
  const Value s = as_string(v);
  return derived_string(py_lower(s.str()), {&s});
}
Result<Value> f_capitalize(Interpreter&, const Value& v, CallArgs&) {
  const Value s = as_string(v);
  return derived_string(py_capitalize(s.str()), {&s});
}
Result<Value> f_title(Interpreter&, const Value& v, CallArgs&) {
  // Jinja's title: words split at runs of whitespace and -({[<.
  const Value s = as_string(v);
  std::string out;
  bool word_start = true;
  for (char c : s.str()) {
    const bool sep = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' ||
                     c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      word_start = true;
      out.push_back(c);
    } else if (word_start) {
      out.push_back(c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c);
      word_start = false;
    } else {
      out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c);
    }
  }
  return derived_string(std::move(out), {&s});
}

Result<Value> f_replace(Interpreter& in, const Value& v, CallArgs& a) {
  const Value s = as_string(v);
  const Value* old = arg(a, 0, "old");
  const Value* repl = arg(a, 1, "new");
  if (!old || !repl) return in.error(a.line, a.column, "replace() needs old and new");
  const Value o = as_string(*old), r = as_string(*repl);
  HEARTH_ASSIGN_OR_RETURN(int64_t count, int_arg(in, a, 2, "count", -1));
  std::string out = py_replace(s.str(), o.str(), r.str(), count);
  HEARTH_RETURN_IF_ERROR(in.check_size(out.size(), a.line, a.column));
  return derived_string(std::move(out), {&s, &r});
}

Result<Value> f_join(Interpreter& in, const Value& v, CallArgs& a) {
  HEARTH_ASSIGN_OR_RETURN(List items, iterable_items(v, in));
  const Value* d = arg(a, 0, "d");
  const Value sep = d ? as_string(*d) : Value::literal("");
  const Value* attribute = arg(a, 1, "attribute");
  RangedText out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out.append(sep);
    Value item = items[i];
    if (attribute) {
      HEARTH_ASSIGN_OR_RETURN(item, item_attribute(in, item, *attribute));
    }
    out.append(as_string(item));
    HEARTH_RETURN_IF_ERROR(in.check_size(out.size(), a.line, a.column));
  }
  return out.take();
}

Result<Value> f_first(Interpreter& in, const Value& v, CallArgs&) {
  HEARTH_ASSIGN_OR_RETURN(List items, iterable_items(v, in));
  if (items.empty()) return Value::undefined("no first item, sequence was empty");
  return items.front();
}
Result<Value> f_last(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_undefined()) return undefined_error(in, v);
  HEARTH_ASSIGN_OR_RETURN(List items, iterable_items(v, in));
  if (items.empty()) return Value::undefined("no last item, sequence was empty");
  return items.back();
}

Result<Value> f_list(Interpreter& in, const Value& v, CallArgs&) {
  HEARTH_ASSIGN_OR_RETURN(List items, iterable_items(v, in));
  return Value::list(std::move(items));
}

Result<Value> f_items(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::list();
  if (!v.is_mapping()) {
    return in.error(in.line(), in.column(),
                    std::string("Can only get item pairs from a mapping, not ") + kind_name(v));
  }
  List out;
  for (const auto& [k, val] : v.entries()) out.push_back(Value::tuple({k, val}));
  return Value::list(std::move(out));
}

// Python's int(str): optional sign, digits with single underscores, surrounding spaces.
bool parse_int(std::string_view s, int64_t base, int64_t* out) {
  auto [b, e] = strip_bounds(s, nullptr, true, true);
  s = s.substr(b, e - b);
  if (s.empty()) return false;
  bool neg = false;
  if (s[0] == '+' || s[0] == '-') {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return false;
  int64_t v = 0;
  bool prev_digit = false;
  for (char c : s) {
    if (c == '_') {
      if (!prev_digit) return false;
      prev_digit = false;
      continue;
    }
    int d = c >= '0' && c <= '9'                 ? c - '0'
            : (c | 32) >= 'a' && (c | 32) <= 'z' ? (c | 32) - 'a' + 10
                                                 : 99;
    if (d >= base) return false;
    if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v)) return false;
    prev_digit = true;
  }
  if (!prev_digit) return false;
  *out = neg ? -v : v;
  return true;
}

bool parse_float(std::string_view s, double* out) {
  auto [b, e] = strip_bounds(s, nullptr, true, true);
  std::string t(s.substr(b, e - b));
  if (t.empty()) return false;
  char* end = nullptr;
  const double d = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return false;
  *out = d;
  return true;
}

Result<Value> f_int(Interpreter& in, const Value& v, CallArgs& a) {
  const Value* d = arg(a, 0, "default");
  HEARTH_ASSIGN_OR_RETURN(int64_t base, int_arg(in, a, 1, "base", 10));
  const Value dflt = d ? *d : Value::integer(0);
  if (v.is_integral()) return Value::integer(v.as_int());
  if (v.kind() == Kind::kFloat) {
    if (!std::isfinite(v.as_double()) || std::fabs(v.as_double()) > 9.2e18) return dflt;
    return Value::integer(static_cast<int64_t>(v.as_double()));
  }
  if (v.is_string()) {
    int64_t i;
    if (parse_int(v.str(), base, &i)) return Value::integer(i);
    double f;
    if (parse_float(v.str(), &f) && std::isfinite(f) && std::fabs(f) < 9.2e18) {
      return Value::integer(static_cast<int64_t>(f));
    }
  }
  return dflt;
}

Result<Value> f_float(Interpreter&, const Value& v, CallArgs& a) {
  const Value* d = arg(a, 0, "default");
  const Value dflt = d ? *d : Value::number(0.0);
  if (v.is_number()) return Value::number(v.as_double());
  double f;
  if (v.is_string() && parse_float(v.str(), &f)) return Value::number(f);
  return dflt;
}

Result<Value> f_abs(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_integral()) {
    if (v.as_int() == INT64_MIN) return in.error(in.line(), in.column(), "integer overflow");
    return Value::integer(std::llabs(v.as_int()));
  }
  if (v.kind() == Kind::kFloat) return Value::number(std::fabs(v.as_double()));
  return in.error(in.line(), in.column(),
                  std::string("bad operand type for abs(): '") + kind_name(v) + "'");
}

Result<Value> f_round(Interpreter& in, const Value& v, CallArgs& a) {
  HEARTH_ASSIGN_OR_RETURN(int64_t precision, int_arg(in, a, 0, "precision", 0));
  HEARTH_ASSIGN_OR_RETURN(const Value* method, str_arg(in, a, 1, "method", false));
  const std::string m = method ? method->str() : "common";
  if (m != "common" && m != "ceil" && m != "floor") {
    return in.error(a.line, a.column, "method must be common, ceil or floor");
  }
  if (!v.is_number()) {
    return in.error(in.line(), in.column(),
                    std::string("type ") + kind_name(v) + " doesn't define __round__ method");
  }
  if (precision > 300) precision = 300;
  if (precision < -300) precision = -300;
  const double x = v.as_double();
  const double scale = std::pow(10.0, static_cast<double>(precision));
  double r;
  if (m == "ceil") {
    r = std::ceil(x * scale) / scale;
  } else if (m == "floor") {
    r = std::floor(x * scale) / scale;
  } else {
    // Python's round: to nearest, ties to even, on the decimal value.
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(std::max<int64_t>(precision, 0)), x);
    r = precision >= 0 ? std::strtod(buf, nullptr) : std::nearbyint(x * scale) / scale;
  }
  return Value::number(r);
}

Result<Value> f_tojson(Interpreter& in, const Value& v, CallArgs& a) {
  JsonOptions o;
  o.ensure_ascii = bool_arg(a, 0, "ensure_ascii", false);
  const Value* indent = arg(a, 1, "indent");
  if (indent && !indent->is_none()) {
    if (!indent->is_integral())
      return in.error(a.line, a.column, "tojson: indent must be an integer");
    o.indent = static_cast<int>(std::clamp<int64_t>(indent->as_int(), 0, 64));
    o.item_sep = ",";
  }
  const Value* seps = arg(a, 2, "separators");
  if (seps && !seps->is_none()) {
    if (!seps->is_sequence() || seps->items().size() != 2 || !seps->items()[0].is_string() ||
        !seps->items()[1].is_string()) {
      return in.error(a.line, a.column, "tojson: separators must be a pair of strings");
    }
    o.item_sep = seps->items()[0].str();
    o.key_sep = seps->items()[1].str();
  }
  o.sort_keys = bool_arg(a, 3, "sort_keys", false);
  auto r = to_json(v, o);
  if (!r.ok()) return in.error(a.line, a.column, r.status().message());
  HEARTH_RETURN_IF_ERROR(in.check_size(r->size(), a.line, a.column));
  return derived_string(std::move(r).value(), {&v});
}

// select / reject / selectattr / rejectattr.
Result<Value> select_impl(Interpreter& in, const Value& v, CallArgs& a, bool attr, bool keep) {
  HEARTH_ASSIGN_OR_RETURN(List items, iterable_items(v, in));
  size_t next = 0;
  Value attribute;
  if (attr) {
    if (a.args.empty()) return in.error(a.line, a.column, "missing parameter for attribute name");
    attribute = a.args[next++];
  }
  std::string test;
  if (next < a.args.size()) {
    if (!a.args[next].is_string()) return in.error(a.line, a.column, "test name must be a string");
    test = a.args[next++].str();
    if (!is_test_name(test)) return in.error(a.line, a.column, "no test named '" + test + "'");
  }
  CallArgs targs;
  targs.line = a.line;
  targs.column = a.column;
  targs.args.assign(a.args.begin() + static_cast<long>(next), a.args.end());
  targs.kwargs = a.kwargs;
  List out;
  for (const auto& item : items) {
    Value x = item;
    if (attr) {
      HEARTH_ASSIGN_OR_RETURN(x, item_attribute(in, item, attribute));
    }
    bool r;
    if (test.empty()) {
      r = truthy(x);
    } else {
      HEARTH_ASSIGN_OR_RETURN(r, apply_test(in, test, x, targs));
    }
    if (r == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}
Result<Value> f_select(Interpreter& in, const Value& v, CallArgs& a) {
  return select_impl(in, v, a, false, true);
}
Result<Value> f_reject(Interpreter& in, const Value& v, CallArgs& a) {
  return select_impl(in, v, a, false, false);
}
Result<Value> f_selectattr(Interpreter& in, const Value& v, CallArgs& a) {
  return select_impl(in, v, a, true, true);
}
Result<Value> f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) {
  return select_impl(in, v, a, true, false);
}

Result<Value> f_map(Interpreter& in, const Value& v, CallArgs& a) {
  HEARTH_ASSIGN_OR_RETURN(List items, iterable_items(v, in));
  List out;
  const Value* attribute = nullptr;
  for (const auto& [k, val] : a.kwargs) {
    if (k == "attribute") attribute = &val;
  }
  if (attribute) {
    const Value* dflt = nullptr;
    for (const auto& [k, val] : a.kwargs) {
      if (k == "default") dflt = &val;
    }
    for (const auto& item : items) {
      HEARTH_ASSIGN_OR_RETURN(Value x, item_attribute(in, item, *attribute));
      if (x.is_undefined() && dflt) x = *dflt;
      out.push_back(std::move(x));
    }
    return Value::list(std::move(out));
  }
  if (a.args.empty() || !a.args[0].is_string()) {
    return in.error(a.line, a.column, "map requires a filter name or attribute=");
  }
  const std::string name = a.args[0].str();
  if (!is_filter_name(name)) return in.error(a.line, a.column, "no filter named '" + name + "'");
  CallArgs fargs;
  fargs.line = a.line;
  fargs.column = a.column;
  fargs.args.assign(a.args.begin() + 1, a.args.end());
  fargs.kwargs = a.kwargs;
  for (const auto& item : items) {
    HEARTH_ASSIGN_OR_RETURN(Value x, apply_filter(in, name, item, fargs));
    out.push_back(std::move(x));
  }
  return Value::list(std::move(out));
}

// A sort key: the item or its attribute, lowercased strings unless case_sensitive.
Result<Value> sort_key(Interpreter& in, const Value& item, const Value* attribute,
                       bool case_sensitive) {
  Value k = item;
  if (attribute) {
    HEARTH_ASSIGN_OR_RETURN(k, item_attribute(in, item, *attribute));
  }
  if (!case_sensitive && k.is_string()) return Value::string(py_lower(k.str()));
  return k;
}

Status sort_values(Interpreter& in, std::vector<std::pair<Value, Value>>& keyed, bool reverse) {
  Status err;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    if (!err.ok()) return false;
    auto c = reverse ? three_way(in, y.first, x.first) : three_way(in, x.first, y.first);
    if (!c.ok()) {
      err = c.status();
      return false;
    }
    return *c < 0;
  });
  return err;
}

Result<Value> f_sort(Interpreter& in, const Value& v, CallArgs& a) {
  HEARTH_ASSIGN_OR_RETURN(List items, iterable_items(v, in));
  const bool reverse = bool_arg(a, 0, "reverse", false);
  const bool cs = bool_arg(a, 1, "case_sensitive", false);
  const Value* attribute = arg(a, 2, "attribute");
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& item : items) {
    HEARTH_ASSIGN_OR_RETURN(Value k, sort_key(in, item, attribute, cs));
    keyed.emplace_back(std::move(k), std::move(item));
  }
  HEARTH_RETURN_IF_ERROR(sort_values(in, keyed, reverse));
  List out;
  for (auto& [k, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Result<Value> f_dictsort(Interpreter& in, const Value& v, CallArgs& a) {
  if (!v.is_mapping()) return in.error(in.line(), in.column(), "dictsort: not a mapping");
  const bool cs = bool_arg(a, 0, "case_sensitive", false);
  HEARTH_ASSIGN_OR_RETURN(const Value* by, str_arg(in, a, 1, "by", false));
  const bool reverse = bool_arg(a, 2, "reverse", false);
  const bool by_value = by && by->str() == "value";
  if (by && !by_value && by->str() != "key") {
    return in.error(a.line, a.column, "You can only sort by either \"key\" or \"value\"");
  }
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& [k, val] : v.entries()) {
    HEARTH_ASSIGN_OR_RETURN(Value key, sort_key(in, by_value ? val : k, nullptr, cs));
    keyed.emplace_back(std::move(key), Value::tuple({k, val}));
  }
  HEARTH_RETURN_IF_ERROR(sort_values(in, keyed, reverse));
  List out;
  for (auto& [k, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Result<Value> f_unique(Interpreter& in, const Value& v, CallArgs& a) {
  HEARTH_ASSIGN_OR_RETURN(List items, iterable_items(v, in));
  const bool cs = bool_arg(a, 0, "case_sensitive", false);
  const Value* attribute = arg(a, 1, "attribute");
  List out, seen;
  for (auto& item : items) {
    HEARTH_ASSIGN_OR_RETURN(Value k, sort_key(in, item, attribute, cs));
    bool dup = false;
    for (const auto& s : seen) dup = dup || equals(s, k);
    if (dup) continue;
    HEARTH_RETURN_IF_ERROR(in.count_steps(seen.size(), a.line, a.column));
    seen.push_back(std::move(k));
    out.push_back(std::move(item));
  }
  return Value::list(std::move(out));
}

Result<Value> minmax(Interpreter& in, const Value& v, CallArgs& a, bool want_max) {
  HEARTH_ASSIGN_OR_RETURN(List items, iterable_items(v, in));
  if (items.empty()) return Value::undefined("no largest/smallest item, sequence was empty");
  const bool cs = bool_arg(a, 0, "case_sensitive", false);
  const Value* attribute = arg(a, 1, "attribute");
  size_t best = 0;
  HEARTH_ASSIGN_OR_RETURN(Value best_key, sort_key(in, items[0], attribute, cs));
  for (size_t i = 1; i < items.size(); ++i) {
    HEARTH_ASSIGN_OR_RETURN(Value k, sort_key(in, items[i], attribute, cs));
    HEARTH_ASSIGN_OR_RETURN(int c, three_way(in, k, best_key));
    if (want_max ? c > 0 : c < 0) {
      best = i;
      best_key = std::move(k);
    }
  }
  return items[best];
}
Result<Value> f_min(Interpreter& in, const Value& v, CallArgs& a) {
  return minmax(in, v, a, false);
}
Result<Value> f_max(Interpreter& in, const Value& v, CallArgs& a) {
  return minmax(in, v, a, true);
}

Result<Value> f_sum(Interpreter& in, const Value& v, CallArgs& a) {
  HEARTH_ASSIGN_OR_RETURN(List items, iterable_items(v, in));
  const Value* attribute = arg(a, 0, "attribute");
  const Value* start = arg(a, 1, "start");
  Value acc = start ? *start : Value::integer(0);
  for (const auto& item : items) {
    Value x = item;
    if (attribute) {
      HEARTH_ASSIGN_OR_RETURN(x, item_attribute(in, item, *attribute));
    }
    HEARTH_ASSIGN_OR_RETURN(acc, binary_op(in, "+", acc, x));
  }
  return acc;
}

Result<Value> f_reverse(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_string()) {
    const auto cps = code_points(v.str());
    std::string out;
    for (auto it = cps.rbegin(); it != cps.rend(); ++it) append_utf8(out, *it);
    return derived_string(std::move(out), {&v});
  }
  HEARTH_ASSIGN_OR_RETURN(List items, iterable_items(v, in));
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Result<Value> f_indent(Interpreter& in, const Value& v, CallArgs& a) {
  const Value s = as_string(v);
  const Value* w = arg(a, 0, "width");
  std::string ind;
  if (w && w->is_string()) {
    ind = w->str();
  } else {
    HEARTH_ASSIGN_OR_RETURN(int64_t width, int_arg(in, a, 0, "width", 4));
    ind.assign(static_cast<size_t>(std::clamp<int64_t>(width, 0, 1024)), ' ');
  }
  const bool first = bool_arg(a, 1, "first", false);
  const bool blank = bool_arg(a, 2, "blank", false);
  auto lines = split_lines(s.str() + "\n");
  std::string out;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) out.append("\n").append(ind);
      out += lines[i];
    }
  } else if (!lines.empty()) {
    out = lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      out.push_back('\n');
      if (!lines[i].empty()) out += ind;
      out += lines[i];
    }
  }
  if (first) out = ind + out;
  HEARTH_RETURN_IF_ERROR(in.check_size(out.size(), a.line, a.column));
  return derived_string(std::move(out), {&s});
}

Result<Value> f_center(Interpreter& in, const Value& v, CallArgs& a) {
  const Value s = as_string(v);
  HEARTH_ASSIGN_OR_RETURN(int64_t width, int_arg(in, a, 0, "width", 80));
  const int64_t n = static_cast<int64_t>(utf8_length(s.str()));
  width = std::min<int64_t>(width, 1 << 20);
  if (width <= n) return s;
  const int64_t pad = width - n;
  const int64_t left = pad / 2 + (pad & width & 1);
  std::string out(static_cast<size_t>(left), ' ');
  out += s.str();
  out.append(static_cast<size_t>(pad - left), ' ');
  return derived_string(std::move(out), {&s});
}

Result<Value> f_wordcount(Interpreter&, const Value& v, CallArgs&) {
  const std::string s = to_str(v);
  int64_t n = 0;
  bool in_word = false;
  for (unsigned char c : s) {
    const bool w = std::isalnum(c) || c == '_' || c >= 0x80;
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

Result<Value> f_truncate(Interpreter& in, const Value& v, CallArgs& a) {
  const Value s = as_string(v);
  HEARTH_ASSIGN_OR_RETURN(int64_t length, int_arg(in, a, 0, "length", 255));
  const bool killwords = bool_arg(a, 1, "killwords", false);
  const Value* end_v = arg(a, 2, "end");
  const std::string end = end_v ? to_str(*end_v) : "...";
  HEARTH_ASSIGN_OR_RETURN(int64_t leeway, int_arg(in, a, 3, "leeway", 5));
  const int64_t n = static_cast<int64_t>(utf8_length(s.str()));
  if (n <= length + leeway) return s;
  const int64_t keep = std::max<int64_t>(0, length - static_cast<int64_t>(utf8_length(end)));
  std::string head = s.str().substr(0, utf8_offset(s.str(), static_cast<size_t>(keep)));
  if (!killwords) {
    const size_t sp = head.rfind(' ');
    if (sp != std::string::npos) head.resize(sp);
  }
  return derived_string(head + end, {&s});
}

Result<Value> f_format(Interpreter& in, const Value& v, CallArgs& a) {
  const Value s = as_string(v);
  Value args = a.args.size() == 1 ? Value::tuple({a.args[0]}) : Value::tuple(a.args);
  return binary_op(in, "%", s, args);
}

Result<Value> f_attr(Interpreter&, const Value& v, CallArgs& a) {
  const Value* name = arg(a, 0, "name");
  if (!name || !name->is_string()) return Value::undefined();
  if (v.kind() == Kind::kNamespace) {
    if (const Value* x = v.find(name->str())) return *x;
    return Value::undefined("'" + name->str() + "' is undefined");
  }
  return method(v, name->str());
}

Result<Value> f_batch(Interpreter& in, const Value& v, CallArgs& a) {
  HEARTH_ASSIGN_OR_RETURN(List items, iterable_items(v, in));
  HEARTH_ASSIGN_OR_RETURN(int64_t n, int_arg(in, a, 0, "linecount", 1));
  if (n <= 0) return in.error(a.line, a.column, "batch: linecount must be positive");
  const Value* fill = arg(a, 1, "fill_with");
  List out, cur;
  for (auto& x : items) {
    cur.push_back(std::move(x));
    if (static_cast<int64_t>(cur.size()) == n) {
      out.push_back(Value::list(std::move(cur)));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (fill) {
      while (static_cast<int64_t>(cur.size()) < n) cur.push_back(*fill);
    }
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::list(std::move(out));
}

struct Entry {
  const char* name;
  Filter fn;
};

const Entry kFilters[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"batch", f_batch},
    {"capitalize", f_capitalize},
    {"center", f_center},
    {"count", f_length},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", f_dictsort},
    {"e", f_escape},
    {"escape", f_escape},
    {"filesizeformat", nullptr},
    {"first", f_first},
    {"float", f_float},
    {"forceescape", f_escape},
    {"format", f_format},
    {"groupby", nullptr},
    {"indent", f_indent},
    {"int", f_int},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", f_map},
    {"max", f_max},
    {"min", f_min},
    {"pprint", nullptr},
    {"reject", f_reject},
    {"rejectattr", f_rejectattr},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"round", f_round},
    {"safe", f_safe},
    {"select", f_select},
    {"selectattr", f_selectattr},
    {"slice", nullptr},
    {"sort", f_sort},
    {"string", f_string},
    {"striptags", nullptr},
    {"sum", f_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"truncate", f_truncate},
    {"unique", f_unique},
    {"upper", f_upper},
    {"urlencode", nullptr},
    {"urlize", nullptr},
    {"wordcount", f_wordcount},
    {"wordwrap", nullptr},
    {"xmlattr", nullptr},
};

const Entry* find_filter(std::string_view name) {
  for (const auto& e : kFilters) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

}  // namespace

bool is_filter_name(std::string_view name) {
  return find_filter(name) != nullptr;
}

Result<Value> apply_filter(Interpreter& in, std::string_view name, const Value& input,
                           CallArgs& args) {
  const Entry* e = find_filter(name);
  if (!e) return in.error(args.line, args.column, "no filter named '" + std::string(name) + "'");
  if (!e->fn) {
    return in.error(args.line, args.column,
                    "the filter '" + std::string(name) + "' is not supported by hearth");
  }
  return e->fn(in, input, args);
}

}  // namespace hearth::jinja
