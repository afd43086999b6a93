// Template globals: Jinja2's range / dict / namespace / joiner / cycler and
// transformers' raise_exception and strftime_now.
#include <ctime>

#include "jinja/builtins.h"
#include "jinja/call_util.h"

namespace hearth::jinja {
namespace {

// Jinja's sandbox refuses ranges longer than this (MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

Result<Value> g_range(Interpreter& in, CallArgs& a) {
  if (!a.kwargs.empty()) return in.error(a.line, a.column, "range() takes no keyword arguments");
  int64_t start = 0, stop = 0, step = 1;
  for (const auto& v : a.args) {
    if (!v.is_integral()) {
      return in.error(
          a.line, a.column,
          std::string("'") + kind_name(v) + "' object cannot be interpreted as an integer");
    }
  }
  if (a.args.size() == 1) {
    stop = a.args[0].as_int();
  } else if (a.args.size() == 2 || a.args.size() == 3) {
    start = a.args[0].as_int();
    stop = a.args[1].as_int();
    if (a.args.size() == 3) step = a.args[2].as_int();
  } else {
    return in.error(a.line, a.column, "range expected 1 to 3 arguments");
  }
  if (step == 0) return in.error(a.line, a.column, "range() arg 3 must not be zero");
  const long double span = static_cast<long double>(stop) - static_cast<long double>(start);
  long double count = span / static_cast<long double>(step);
  if (count < 0) count = 0;
  if (count > kMaxRange) {
    return in.error(a.line, a.column,
                    "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  }
  HEARTH_RETURN_IF_ERROR(in.count_steps(static_cast<size_t>(count), a.line, a.column));
  List out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
    out.push_back(Value::integer(i));
  return Value::list(std::move(out));
}

Result<Value> g_dict(Interpreter& in, CallArgs& a) {
  Dict d;
  if (!a.args.empty()) {
    if (a.args.size() > 1 || !a.args[0].is_mapping()) {
      return in.error(a.line, a.column, "dict() takes a mapping and keyword arguments");
    }
    d = a.args[0].entries();
  }
  for (auto& [k, v] : a.kwargs) d.emplace_back(Value::string(k), v);
  return Value::dict(std::move(d));
}

Result<Value> g_namespace(Interpreter& in, CallArgs& a) {
  Dict d;
  for (const auto& v : a.args) {
    if (!v.is_mapping()) return in.error(a.line, a.column, "namespace() takes a mapping");
    for (const auto& e : v.entries()) d.push_back(e);
  }
  for (auto& [k, v] : a.kwargs) {
    bool replaced = false;
    for (auto& [ek, ev] : d) {
      if (ek.is_string() && ek.str() == k) {
        ev = v;
        replaced = true;
      }
    }
    if (!replaced) d.emplace_back(Value::string(k), v);
  }
  Value ns = Value::name_space(std::move(d));
  in.track_namespace(ns);
  return ns;
}

Result<Value> g_raise_exception(Interpreter& in, CallArgs& a) {
  const Value* m = a.get(0, "message");
  return in.error(a.line, a.column,
                  std::string("raise_exception: ").append(m ? to_str(*m) : std::string()));
}

Result<Value> g_strftime_now(Interpreter& in, CallArgs& a) {
  HEARTH_ASSIGN_OR_RETURN(const Value* fmt, str_arg(in, a, 0, "format", true));
  std::tm tm{};
  if (in.options().fixed_now) {
    tm = in.options().now;
  } else {
    const std::time_t t = std::time(nullptr);
    localtime_r(&t, &tm);
  }
  if (fmt->str().empty()) return Value::string("");
  std::string buf(256, '\0');
  for (int tries = 0; tries < 8; ++tries) {
    const size_t n = std::strftime(buf.data(), buf.size(), fmt->str().c_str(), &tm);
    if (n > 0) {
      buf.resize(n);
      return Value::string(buf);
    }
    if (buf.size() > fmt->str().size() * 64 + 1024) break;
    buf.resize(buf.size() * 4);
  }
  return Value::string("");
}

Result<Value> g_joiner(Interpreter&, CallArgs& a) {
  const Value* sep = a.get(0, "sep");
  Value s = sep ? *sep : Value::literal(", ");
  auto used = std::make_shared<bool>(false);
  return Value::callable("joiner", [s, used](Interpreter&, CallArgs&) -> Result<Value> {
    if (!*used) {
      *used = true;
      return Value::string("");
    }
    return s;
  });
}

struct Entry {
  const char* name;
  Result<Value> (*fn)(Interpreter&, CallArgs&);
};

const Entry kGlobals[] = {
    {"range", g_range},
    {"dict", g_dict},
    {"namespace", g_namespace},
    {"raise_exception", g_raise_exception},
    {"strftime_now", g_strftime_now},
    {"joiner", g_joiner},
};

}  // namespace

Value global_function(std::string_view name) {
  for (const auto& e : kGlobals) {
    if (name == e.name) {
      auto fn = e.fn;
      return Value::callable(e.name, [fn](Interpreter& in, CallArgs& a) { return fn(in, a); });
    }
  }
  return Value::undefined();
}

}  // namespace hearth::jinja
