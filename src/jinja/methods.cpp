// Python methods of str, dict and list that templates call (`content.split('x')`,
// `message.get('k')`). The sandbox is immutable: mutating methods raise.
#include <algorithm>

#include "jinja/builtins.h"
#include "jinja/call_util.h"
#include "jinja/operators.h"
#include "jinja/strings.h"

namespace hearth::jinja {
namespace {

using Method = Result<Value> (*)(Interpreter&, const Value&, CallArgs&);

Result<Value> str_strip_impl(Interpreter& in, const Value& s, CallArgs& a, bool l, bool r) {
  HEARTH_ASSIGN_OR_RETURN(const Value* chars, str_arg(in, a, 0, "chars", false));
  const std::string* set = chars ? &chars->str() : nullptr;
  auto [b, e] = strip_bounds(s.str(), set, l, r);
  return substring(s, b, e);
}
Result<Value> m_strip(Interpreter& in, const Value& s, CallArgs& a) {
  return str_strip_impl(in, s, a, true, true);
}
Result<Value> m_lstrip(Interpreter& in, const Value& s, CallArgs& a) {
  return str_strip_impl(in, s, a, true, false);
}
Result<Value> m_rstrip(Interpreter& in, const Value& s, CallArgs& a) {
  return str_strip_impl(in, s, a, false, true);
}

Result<Value> split_impl(Interpreter& in, const Value& s, CallArgs& a, bool from_right) {
  HEARTH_ASSIGN_OR_RETURN(const Value* sep, str_arg(in, a, 0, "sep", false));
  HEARTH_ASSIGN_OR_RETURN(int64_t maxsplit, int_arg(in, a, 1, "maxsplit", -1));
  if (sep && sep->str().empty()) return in.error(a.line, a.column, "empty separator");
  std::vector<std::pair<size_t, size_t>> parts;
  if (from_right && maxsplit >= 0) {
    // rsplit with a limit: split all, then re-join the leftmost pieces.
    auto all = split_bounds(s.str(), sep ? &sep->str() : nullptr, -1);
    if (static_cast<int64_t>(all.size()) > maxsplit + 1) {
      const size_t keep = all.size() - static_cast<size_t>(maxsplit);
      size_t head_begin = all[0].first;
      if (!sep) head_begin = strip_bounds(s.str(), nullptr, true, false).first;
      parts.push_back({head_begin, all[keep - 1].second});
      parts.insert(parts.end(), all.begin() + static_cast<long>(keep), all.end());
    } else {
      parts = std::move(all);
    }
  } else {
    parts = split_bounds(s.str(), sep ? &sep->str() : nullptr, maxsplit);
  }
  HEARTH_RETURN_IF_ERROR(in.count_steps(parts.size(), a.line, a.column));
  List out;
  for (auto [b, e] : parts) out.push_back(substring(s, b, e));
  return Value::list(std::move(out));
}
Result<Value> m_split(Interpreter& in, const Value& s, CallArgs& a) {
  return split_impl(in, s, a, false);
}
Result<Value> m_rsplit(Interpreter& in, const Value& s, CallArgs& a) {
  return split_impl(in, s, a, true);
}
Result<Value> m_splitlines(Interpreter& in, const Value& s, CallArgs& a) {
  List out;
  for (auto& l : split_lines(s.str())) out.push_back(derived_string(std::move(l), {&s}));
  HEARTH_RETURN_IF_ERROR(in.count_steps(out.size(), a.line, a.column));
  return Value::list(std::move(out));
}

Result<Value> affix_impl(Interpreter& in, const Value& s, CallArgs& a, bool start) {
  const Value* p = arg(a, 0, "prefix");
  if (!p) return in.error(a.line, a.column, "missing argument");
  auto test = [&](const Value& x) -> Result<bool> {
    if (!x.is_string()) {
      return in.error(a.line, a.column,
                      std::string(start ? "startswith" : "endswith") +
                          " first arg must be str or a tuple of str, not " + kind_name(x));
    }
    const std::string& t = s.str();
    const std::string& f = x.str();
    if (f.size() > t.size()) return false;
    return start ? t.compare(0, f.size(), f) == 0
                 : t.compare(t.size() - f.size(), f.size(), f) == 0;
  };
  if (p->kind() == Kind::kTuple) {
    for (const auto& x : p->items()) {
      HEARTH_ASSIGN_OR_RETURN(bool r, test(x));
      if (r) return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  HEARTH_ASSIGN_OR_RETURN(bool r, test(*p));
  return Value::boolean(r);
}
Result<Value> m_startswith(Interpreter& in, const Value& s, CallArgs& a) {
  return affix_impl(in, s, a, true);
}
Result<Value> m_endswith(Interpreter& in, const Value& s, CallArgs& a) {
  return affix_impl(in, s, a, false);
}

Result<Value> m_replace(Interpreter& in, const Value& s, CallArgs& a) {
  HEARTH_ASSIGN_OR_RETURN(const Value* old, str_arg(in, a, 0, "old", true));
  HEARTH_ASSIGN_OR_RETURN(const Value* repl, str_arg(in, a, 1, "new", true));
  HEARTH_ASSIGN_OR_RETURN(int64_t count, int_arg(in, a, 2, "count", -1));
  std::string out = py_replace(s.str(), old->str(), repl->str(), count);
  HEARTH_RETURN_IF_ERROR(in.check_size(out.size(), a.line, a.column));
  return derived_string(std::move(out), {&s, repl});
}

Result<Value> m_upper(Interpreter&, const Value& s, CallArgs&) {
  return derived_string(py_upper(s.str()), {&s});
}
Result<Value> m_lower(Interpreter&, const Value& s, CallArgs&) {
  return derived_string(py_lower(s.str()), {&s});
}
Result<Value> m_title(Interpreter&, const Value& s, CallArgs&) {
  return derived_string(py_title(s.str()), {&s});
}
Result<Value> m_capitalize(Interpreter&, const Value& s, CallArgs&) {
  return derived_string(py_capitalize(s.str()), {&s});
}

Result<Value> find_impl(Interpreter& in, const Value& s, CallArgs& a, bool reverse, bool raise) {
  HEARTH_ASSIGN_OR_RETURN(const Value* sub, str_arg(in, a, 0, "sub", true));
  const size_t p = reverse ? s.str().rfind(sub->str()) : s.str().find(sub->str());
  if (p == std::string::npos) {
    if (raise) return in.error(a.line, a.column, "substring not found");
    return Value::integer(-1);
  }
  return Value::integer(static_cast<int64_t>(utf8_length(std::string_view(s.str()).substr(0, p))));
}
Result<Value> m_find(Interpreter& in, const Value& s, CallArgs& a) {
  return find_impl(in, s, a, false, false);
}
Result<Value> m_rfind(Interpreter& in, const Value& s, CallArgs& a) {
  return find_impl(in, s, a, true, false);
}
Result<Value> m_index(Interpreter& in, const Value& s, CallArgs& a) {
  return find_impl(in, s, a, false, true);
}
Result<Value> m_count(Interpreter& in, const Value& s, CallArgs& a) {
  HEARTH_ASSIGN_OR_RETURN(const Value* sub, str_arg(in, a, 0, "sub", true));
  if (sub->str().empty()) return Value::integer(static_cast<int64_t>(utf8_length(s.str()) + 1));
  int64_t n = 0;
  for (size_t p = s.str().find(sub->str()); p != std::string::npos;
       p = s.str().find(sub->str(), p + sub->str().size())) {
    ++n;
  }
  return Value::integer(n);
}

Result<Value> m_join(Interpreter& in, const Value& s, CallArgs& a) {
  const Value* seq = arg(a, 0, "iterable");
  if (!seq) return in.error(a.line, a.column, "join() takes exactly one argument");
  HEARTH_ASSIGN_OR_RETURN(List items, iterable_items(*seq, in));
  RangedText out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string()) {
      return in.error(a.line, a.column,
                      "sequence item " + std::to_string(i) + ": expected str instance, " +
                          kind_name(items[i]) + " found");
    }
    if (i) out.append(s);
    out.append(items[i]);
    HEARTH_RETURN_IF_ERROR(in.check_size(out.size(), a.line, a.column));
  }
  return out.take();
}

Result<Value> predicate(const Value& s, bool (*pred)(uint32_t)) {
  const auto cps = code_points(s.str());
  if (cps.empty()) return Value::boolean(false);
  for (uint32_t c : cps) {
    if (!pred(c)) return Value::boolean(false);
  }
  return Value::boolean(true);
}
Result<Value> m_isdigit(Interpreter&, const Value& s, CallArgs&) {
  return predicate(s, [](uint32_t c) { return c >= '0' && c <= '9'; });
}
Result<Value> m_isalpha(Interpreter&, const Value& s, CallArgs&) {
  return predicate(s, [](uint32_t c) { return (c | 32) >= 'a' && (c | 32) <= 'z'; });
}
Result<Value> m_isalnum(Interpreter&, const Value& s, CallArgs&) {
  return predicate(
      s, [](uint32_t c) { return ((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9'); });
}
Result<Value> m_isspace(Interpreter&, const Value& s, CallArgs&) {
  return predicate(s, py_isspace);
}

Result<Value> m_format(Interpreter& in, const Value& s, CallArgs& a) {
  // str.format with {} / {0} / {name} fields (no format specs beyond ':' being ignored).
  RangedText out;
  const std::string& f = s.str();
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      out.append_plain("{");
      ++i;
    } else if (f[i] == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      out.append_plain("}");
      ++i;
    } else if (f[i] == '{') {
      const size_t close = f.find('}', i);
      if (close == std::string::npos) {
        return in.error(a.line, a.column, "Single '{' encountered in format string");
      }
      std::string field = f.substr(i + 1, close - i - 1);
      if (const size_t colon = field.find(':'); colon != std::string::npos) field.resize(colon);
      const Value* v = nullptr;
      if (field.empty()) {
        v = auto_index < a.args.size() ? &a.args[auto_index++] : nullptr;
      } else if (field[0] >= '0' && field[0] <= '9') {
        const size_t idx = static_cast<size_t>(std::atoi(field.c_str()));
        v = idx < a.args.size() ? &a.args[idx] : nullptr;
      } else {
        for (const auto& [k, val] : a.kwargs) {
          if (k == field) v = &val;
        }
      }
      if (!v) return in.error(a.line, a.column, "format: no value for field '" + field + "'");
      out.append(v->is_string() ? *v : Value::string(to_str(*v)));
      i = close;
    } else if (f[i] == '}') {
      return in.error(a.line, a.column, "Single '}' encountered in format string");
    } else {
      out.append_plain(std::string_view(&f[i], 1));
    }
  }
  Value r = out.take();
  if (s.fully_literal()) {
    // Keep the format string's own text literal, arguments as they were.
  }
  return r;
}

Result<Value> m_removeprefix(Interpreter& in, const Value& s, CallArgs& a) {
  HEARTH_ASSIGN_OR_RETURN(const Value* p, str_arg(in, a, 0, "prefix", true));
  if (s.str().compare(0, p->str().size(), p->str()) == 0) {
    return substring(s, p->str().size(), s.str().size());
  }
  return s;
}
Result<Value> m_removesuffix(Interpreter& in, const Value& s, CallArgs& a) {
  HEARTH_ASSIGN_OR_RETURN(const Value* p, str_arg(in, a, 0, "suffix", true));
  const std::string& t = s.str();
  if (!p->str().empty() && t.size() >= p->str().size() &&
      t.compare(t.size() - p->str().size(), p->str().size(), p->str()) == 0) {
    return substring(s, 0, t.size() - p->str().size());
  }
  return s;
}

// ---- dict ----
Result<Value> m_get(Interpreter& in, const Value& d, CallArgs& a) {
  const Value* key = a.get(0, "key");
  if (!key) return in.error(a.line, a.column, "get expected at least 1 argument, got 0");
  if (const Value* v = d.find(*key)) return *v;
  const Value* dflt = a.get(1, "default");
  return dflt ? *dflt : Value::none();
}
Result<Value> m_items(Interpreter& in, const Value& d, CallArgs& a) {
  List out;
  for (const auto& [k, v] : d.entries()) out.push_back(Value::tuple({k, v}));
  HEARTH_RETURN_IF_ERROR(in.count_steps(out.size(), a.line, a.column));
  return Value::list(std::move(out));
}
Result<Value> m_keys(Interpreter&, const Value& d, CallArgs&) {
  List out;
  for (const auto& [k, v] : d.entries()) out.push_back(k);
  return Value::list(std::move(out));
}
Result<Value> m_values(Interpreter&, const Value& d, CallArgs&) {
  List out;
  for (const auto& [k, v] : d.entries()) out.push_back(v);
  return Value::list(std::move(out));
}

// ---- list ----
Result<Value> m_list_index(Interpreter& in, const Value& l, CallArgs& a) {
  const Value* x = a.get(0, "value");
  if (!x) return in.error(a.line, a.column, "index expected 1 argument");
  const auto& items = l.items();
  for (size_t i = 0; i < items.size(); ++i) {
    if (equals(items[i], *x)) return Value::integer(static_cast<int64_t>(i));
  }
  return in.error(a.line, a.column, to_repr(*x) + " is not in list");
}
Result<Value> m_list_count(Interpreter& in, const Value& l, CallArgs& a) {
  const Value* x = a.get(0, "value");
  if (!x) return in.error(a.line, a.column, "count expected 1 argument");
  int64_t n = 0;
  for (const auto& v : l.items()) n += equals(v, *x) ? 1 : 0;
  return Value::integer(n);
}

Result<Value> m_unsafe(Interpreter& in, const Value& obj, CallArgs& a) {
  return in.error(a.line, a.column,
                  std::string("access to a mutating method of a ") + kind_name(obj) +
                      " object is unsafe (the sandbox is immutable)");
}

struct Entry {
  const char* name;
  Method fn;
};

const Entry kStr[] = {
    {"strip", m_strip},
    {"lstrip", m_lstrip},
    {"rstrip", m_rstrip},
    {"split", m_split},
    {"rsplit", m_rsplit},
    {"splitlines", m_splitlines},
    {"startswith", m_startswith},
    {"endswith", m_endswith},
    {"replace", m_replace},
    {"upper", m_upper},
    {"lower", m_lower},
    {"title", m_title},
    {"capitalize", m_capitalize},
    {"find", m_find},
    {"rfind", m_rfind},
    {"index", m_index},
    {"count", m_count},
    {"join", m_join},
    {"isdigit", m_isdigit},
    {"isnumeric", m_isdigit},
    {"isdecimal", m_isdigit},
    {"isalpha", m_isalpha},
    {"isalnum", m_isalnum},
    {"isspace", m_isspace},
    {"format", m_format},
    {"removeprefix", m_removeprefix},
    {"removesuffix", m_removesuffix},
};
const Entry kDict[] = {
    {"get", m_get},       {"items", m_items},       {"keys", m_keys},
    {"values", m_values}, {"pop", m_unsafe},        {"popitem", m_unsafe},
    {"update", m_unsafe}, {"setdefault", m_unsafe}, {"clear", m_unsafe},
};
const Entry kList[] = {
    {"index", m_list_index}, {"count", m_list_count}, {"append", m_unsafe}, {"extend", m_unsafe},
    {"insert", m_unsafe},    {"pop", m_unsafe},       {"remove", m_unsafe}, {"clear", m_unsafe},
    {"sort", m_unsafe},      {"reverse", m_unsafe},
};

template <size_t N>
Method find_method(const Entry (&table)[N], std::string_view name) {
  for (const auto& e : table) {
    if (name == e.name) return e.fn;
  }
  return nullptr;
}

}  // namespace

Value method(const Value& obj, std::string_view name) {
  Method fn = nullptr;
  if (obj.is_string()) {
    fn = find_method(kStr, name);
  } else if (obj.kind() == Kind::kDict) {
    fn = find_method(kDict, name);
  } else if (obj.is_sequence()) {
    fn = find_method(kList, name);
  }
  if (!fn) return Value::undefined();
  return Value::callable(std::string(name),
                         [fn, obj](Interpreter& in, CallArgs& a) { return fn(in, obj, a); });
}

}  // namespace hearth::jinja
