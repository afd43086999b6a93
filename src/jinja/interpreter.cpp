#include "jinja/interpreter.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "jinja/builtins.h"
#include "jinja/lexer.h"
#include "jinja/operators.h"

namespace hearth::jinja {
namespace {

struct DepthGuard {
  explicit DepthGuard(int& d) : d_(d) { ++d_; }
  ~DepthGuard() { --d_; }
  int& d_;
};

// A list of the values `v` iterates over (dict: keys; str: characters).
Result<List> iterate(const Value& v, Interpreter& in, int line, int column) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return List{};
    case Kind::kList:
    case Kind::kTuple:
      return v.items();
    case Kind::kDict: {
      List keys;
      for (const auto& [k, _] : v.entries()) keys.push_back(k);
      return keys;
    }
    case Kind::kString: {
      List chars;
      const std::string& s = v.str();
      for (size_t i = 0; i < s.size();) {
        const size_t next = i + utf8_offset(std::string_view(s).substr(i), 1);
        chars.push_back(substring(v, i, next));
        i = next;
      }
      return chars;
    }
    default:
      return in.error(line, column,
                      std::string("'").append(kind_name(v)).append("' object is not iterable"));
  }
}

}  // namespace

Result<List> iterable_items(const Value& v, Interpreter& in) {
  return iterate(v, in, in.line(), in.column());
}

Interpreter::~Interpreter() {
  frames_.clear();
  for (auto& ns : namespaces_) ns.mutable_entries().clear();
}

Status Interpreter::error(int line, int column, std::string_view what) const {
  return InvalidArgument(at(line, column, what));
}

Status Interpreter::check_deadline(int line, int column) {
  if (std::chrono::steady_clock::now() > deadline_) {
    return error(
        line, column,
        "the template ran too long (over " + std::to_string(opts_.max_milliseconds) + " ms)");
  }
  return OkStatus();
}

Status Interpreter::count_steps(size_t n, int line, int column) {
  HEARTH_RETURN_IF_ERROR(check_deadline(line, column));
  steps_ += n;
  if (steps_ > opts_.max_steps) {
    return error(line, column,
                 "the template ran too long (more than " + std::to_string(opts_.max_steps) +
                     " loop iterations and calls)");
  }
  return OkStatus();
}

Status Interpreter::check_size(size_t bytes, int line, int column) const {
  if (bytes > opts_.max_output_bytes) {
    return error(line, column,
                 "the template built a value larger than " +
                     std::to_string(opts_.max_output_bytes) + " bytes");
  }
  return OkStatus();
}

Status Interpreter::check_items(size_t items, int line, int column) const {
  if (items > opts_.max_list_items) {
    return error(
        line, column,
        "the template built a list longer than " + std::to_string(opts_.max_list_items) + " items");
  }
  return OkStatus();
}

int Interpreter::push_frame(int parent) {
  frames_.push_back(Frame{parent, {}});
  current_ = static_cast<int>(frames_.size()) - 1;
  return current_;
}

void Interpreter::pop_frame() {
  frames_.pop_back();
  current_ = static_cast<int>(frames_.size()) - 1;
}

Value Interpreter::lookup(const std::string& name) const {
  for (int f = current_; f >= 0; f = frames_[f].parent) {
    for (const auto& [k, v] : frames_[f].vars) {
      if (k == name) return v;
    }
  }
  Value g = global_function(name);
  if (!g.is_undefined()) return g;
  return Value::undefined("'" + name + "' is undefined");
}

void Interpreter::assign(const std::string& name, Value v) {
  auto& vars = frames_[current_].vars;
  for (auto& [k, old] : vars) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  vars.emplace_back(name, std::move(v));
}

Result<RenderOutput> Interpreter::render(const Body& body,
                                         std::vector<std::pair<std::string, Value>> globals) {
  deadline_ = std::chrono::steady_clock::now() +
              std::chrono::milliseconds(std::max(opts_.max_milliseconds, 1));
  frames_.clear();
  push_frame(-1);
  frames_[0].vars = std::move(globals);
  RangedText out;
  Flow flow = Flow::kNormal;
  HEARTH_RETURN_IF_ERROR(exec_body(body, out, flow));
  RenderOutput r;
  r.literal_ranges = std::move(out.ranges());
  r.text = out.text();
  return r;
}

Status Interpreter::exec_body(const Body& body, RangedText& out, Flow& flow) {
  for (const auto& s : body) {
    HEARTH_RETURN_IF_ERROR(exec(*s, out, flow));
    if (flow != Flow::kNormal) return OkStatus();
  }
  return OkStatus();
}

Status Interpreter::exec(const Stmt& s, RangedText& out, Flow& flow) {
  DepthGuard g(depth_);
  if (depth_ > opts_.max_depth) return error(s.line, s.column, "the template nests too deeply");
  if ((++ticks_ & 63) == 0) HEARTH_RETURN_IF_ERROR(check_deadline(s.line, s.column));
  line_ = s.line;
  column_ = s.column;
  switch (s.kind) {
    case StmtKind::kText:
      out.append_literal(s.text);
      return check_size(out.size(), s.line, s.column);
    case StmtKind::kOutput: {
      HEARTH_ASSIGN_OR_RETURN(Value v, eval(*s.expr));
      out.append(v);
      return check_size(out.size(), s.line, s.column);
    }
    case StmtKind::kIf:
      for (size_t i = 0; i < s.conds.size(); ++i) {
        HEARTH_ASSIGN_OR_RETURN(Value c, eval(*s.conds[i]));
        if (truthy(c)) return exec_body(s.bodies[i], out, flow);
      }
      if (s.bodies.size() > s.conds.size()) return exec_body(s.bodies.back(), out, flow);
      return OkStatus();
    case StmtKind::kFor:
      return exec_for(s, out);
    case StmtKind::kSet:
      return exec_set(s);
    case StmtKind::kSetBlock:
    case StmtKind::kFilterBlock: {
      RangedText inner;
      Flow f = Flow::kNormal;
      const int frame = s.kind == StmtKind::kFilterBlock ? push_frame(current_) : -1;
      Status st = exec_body(s.bodies[0], inner, f);
      if (frame >= 0) pop_frame();
      HEARTH_RETURN_IF_ERROR(st);
      Value v = inner.take();
      if (s.expr) {
        push_frame(current_);
        assign(kBodyHole, std::move(v));
        auto r = eval(*s.expr);
        pop_frame();
        if (!r.ok()) return r.status();
        v = std::move(r).value();
      }
      if (s.kind == StmtKind::kSetBlock) {
        assign(s.targets[0], std::move(v));
        return OkStatus();
      }
      out.append(v);
      return check_size(out.size(), s.line, s.column);
    }
    case StmtKind::kMacro:
      assign(s.text, make_macro(s, current_));
      return OkStatus();
    case StmtKind::kCallBlock: {
      // caller() renders the block's body in the scope of the call site.
      const Expr& call_expr = *s.expr;
      HEARTH_ASSIGN_OR_RETURN(Value callee, eval(*call_expr.kids[0]));
      HEARTH_ASSIGN_OR_RETURN(CallArgs args, eval_args(call_expr, 1));
      Value caller = make_macro(s, current_);
      args.kwargs.emplace_back("caller", std::move(caller));
      HEARTH_ASSIGN_OR_RETURN(Value v, call(callee, args, s.line, s.column));
      out.append(v);
      return check_size(out.size(), s.line, s.column);
    }
    case StmtKind::kWith: {
      std::vector<Value> values;
      for (const auto& e : s.conds) {
        HEARTH_ASSIGN_OR_RETURN(Value v, eval(*e));
        values.push_back(std::move(v));
      }
      push_frame(current_);
      for (size_t i = 0; i < values.size(); ++i) assign(s.targets[i], std::move(values[i]));
      Status st = exec_body(s.bodies[0], out, flow);
      pop_frame();
      return st;
    }
    case StmtKind::kBreak:
      flow = Flow::kBreak;
      return OkStatus();
    case StmtKind::kContinue:
      flow = Flow::kContinue;
      return OkStatus();
    case StmtKind::kBody:
      return exec_body(s.bodies[0], out, flow);
  }
  return OkStatus();
}

namespace {

Status unpack(Interpreter& in, const std::vector<std::string>& targets, const Value& v,
              std::vector<Value>& out, int line, int column) {
  if (targets.size() == 1) {
    out.push_back(v);
    return OkStatus();
  }
  auto items = iterable_items(v, in);
  if (!items.ok()) return items.status();
  if (items->size() != targets.size()) {
    return in.error(
        line, column,
        items->size() < targets.size()
            ? "not enough values to unpack (expected " + std::to_string(targets.size()) + ", got " +
                  std::to_string(items->size()) + ")"
            : "too many values to unpack (expected " + std::to_string(targets.size()) + ")");
  }
  for (auto& x : *items) out.push_back(std::move(x));
  return OkStatus();
}

}  // namespace

Status Interpreter::exec_for(const Stmt& s, RangedText& out) {
  HEARTH_ASSIGN_OR_RETURN(Value seq, eval(*s.expr));
  HEARTH_ASSIGN_OR_RETURN(List all, iterate(seq, *this, s.line, s.column));
  push_frame(current_);
  List items;
  std::vector<std::vector<Value>> bound;
  // The inline filter (`for x in xs if cond`) runs before the loop: loop.length counts
  // the items that pass.
  for (auto& item : all) {
    std::vector<Value> vals;
    Status st = unpack(*this, s.targets, item, vals, s.line, s.column);
    if (st.ok()) st = count_steps(1, s.line, s.column);
    if (!st.ok()) {
      pop_frame();
      return st;
    }
    if (s.cond) {
      for (size_t i = 0; i < vals.size(); ++i) assign(s.targets[i], vals[i]);
      auto c = eval(*s.cond);
      if (!c.ok()) {
        pop_frame();
        return c.status();
      }
      if (!truthy(*c)) continue;
    }
    items.push_back(std::move(item));
    bound.push_back(std::move(vals));
  }
  const size_t n = items.size();
  Status st;
  Value prev = Value::undefined("'previtem' is undefined");
  auto index = std::make_shared<size_t>(0);
  Value loop = Value::name_space({});
  track_namespace(loop);
  {
    const char* names[] = {"index",  "index0", "revindex", "revindex0", "first",   "last",
                           "length", "depth",  "depth0",   "previtem",  "nextitem"};
    for (const char* name : names)
      loop.mutable_entries().emplace_back(Value::string(name), Value());
    loop.mutable_entries()[6].second = Value::integer(static_cast<int64_t>(n));
    loop.mutable_entries()[7].second = Value::integer(1);
    loop.mutable_entries()[8].second = Value::integer(0);
    loop.mutable_entries().emplace_back(
        Value::string("cycle"),
        Value::callable("cycle", [index](Interpreter& in, CallArgs& a) -> Result<Value> {
          if (a.args.empty()) return in.error(a.line, a.column, "no items for cycling given");
          return a.args[*index % a.args.size()];
        }));
    // loop.changed(*values): true on the first call and whenever the values differ
    // from the previous call's.
    auto last = std::make_shared<std::optional<List>>();
    loop.mutable_entries().emplace_back(
        Value::string("changed"),
        Value::callable("changed", [last](Interpreter&, CallArgs& a) -> Result<Value> {
          const Value now = Value::list(a.args);
          if (*last && equals(Value::list(**last), now)) return Value::boolean(false);
          *last = a.args;
          return Value::boolean(true);
        }));
  }
  for (size_t i = 0; i < n && st.ok(); ++i) {
    st = count_steps(1, s.line, s.column);
    if (!st.ok()) break;
    // Each iteration starts from the enclosing scope: a `set` in the body does not carry
    // over to the next iteration (Jinja2 scoping).
    frames_[current_].vars.clear();
    for (size_t t = 0; t < s.targets.size(); ++t) assign(s.targets[t], bound[i][t]);
    // One loop object per loop, advanced in place like Jinja2's LoopContext.
    *index = i;
    Dict& lp = loop.mutable_entries();
    lp[0].second = Value::integer(static_cast<int64_t>(i + 1));
    lp[1].second = Value::integer(static_cast<int64_t>(i));
    lp[2].second = Value::integer(static_cast<int64_t>(n - i));
    lp[3].second = Value::integer(static_cast<int64_t>(n - i - 1));
    lp[4].second = Value::boolean(i == 0);
    lp[5].second = Value::boolean(i + 1 == n);
    lp[9].second = prev;
    lp[10].second = i + 1 < n ? items[i + 1] : Value::undefined("'nextitem' is undefined");
    assign("loop", loop);
    Flow flow = Flow::kNormal;
    st = exec_body(s.bodies[0], out, flow);
    if (flow == Flow::kBreak) break;
    prev = items[i];
  }
  if (st.ok() && n == 0 && !s.bodies[1].empty()) {
    Flow flow = Flow::kNormal;
    st = exec_body(s.bodies[1], out, flow);
  }
  pop_frame();
  return st;
}

Status Interpreter::exec_set(const Stmt& s) {
  HEARTH_ASSIGN_OR_RETURN(Value v, eval(*s.expr));
  if (!s.text.empty()) {  // ns.attr = v
    Value ns = lookup(s.targets[0]);
    if (ns.kind() != Kind::kNamespace) {
      return error(s.line, s.column, "cannot assign attribute on non-namespace object");
    }
    Dict& d = ns.mutable_entries();
    for (auto& [k, old] : d) {
      if (k.is_string() && k.str() == s.text) {
        old = std::move(v);
        return OkStatus();
      }
    }
    d.emplace_back(Value::string(s.text), std::move(v));
    return OkStatus();
  }
  std::vector<Value> vals;
  HEARTH_RETURN_IF_ERROR(unpack(*this, s.targets, v, vals, s.line, s.column));
  for (size_t i = 0; i < vals.size(); ++i) assign(s.targets[i], std::move(vals[i]));
  return OkStatus();
}

Value Interpreter::make_macro(const Stmt& s, int frame) {
  const Stmt* stmt = &s;
  auto keep = s.shared_body;  // the body outlives this render's tree walk
  return Value::callable(s.kind == StmtKind::kMacro ? s.text : "caller",
                         [stmt, frame, keep](Interpreter& in, CallArgs& a) -> Result<Value> {
                           return in.call_macro(*stmt, frame, a);
                         });
}

Result<Value> Interpreter::call_macro(const Stmt& s, int def_frame, CallArgs& args) {
  DepthGuard g(depth_);
  if (depth_ > opts_.max_depth) return error(args.line, args.column, "macro calls nest too deeply");
  HEARTH_RETURN_IF_ERROR(count_steps(1, args.line, args.column));
  const std::string name = s.kind == StmtKind::kMacro ? s.text : "caller";
  if (args.args.size() > s.params.size()) {
    return error(args.line, args.column,
                 "macro '" + name + "' takes not more than " + std::to_string(s.params.size()) +
                     " argument(s)");
  }
  Value caller;
  for (const auto& [k, v] : args.kwargs) {
    bool known = k == "caller";
    for (const auto& p : s.params) known = known || p.name == k;
    if (!known) {
      return error(args.line, args.column,
                   "macro '" + name + "' takes no keyword argument '" + k + "'");
    }
    if (k == "caller") caller = v;
  }
  const int saved = current_;
  // The macro sees the scope it was defined in (by frame index: that frame is live
  // whenever the macro is callable), not the caller's.
  if (def_frame >= static_cast<int>(frames_.size())) def_frame = 0;
  frames_.push_back(Frame{def_frame, {}});
  current_ = static_cast<int>(frames_.size()) - 1;
  const size_t depth_frames = frames_.size();
  Status st;
  for (size_t i = 0; i < s.params.size() && st.ok(); ++i) {
    const auto& p = s.params[i];
    const Value* given = nullptr;
    for (const auto& [k, v] : args.kwargs) {
      if (k == p.name) given = &v;
    }
    if (!given && i < args.args.size()) given = &args.args[i];
    if (given) {
      assign(p.name, *given);
    } else if (p.default_value) {
      auto d = eval(*p.default_value);
      if (!d.ok()) {
        st = d.status();
        break;
      }
      assign(p.name, std::move(d).value());
    } else {
      assign(p.name, Value::undefined("'" + p.name + "' is undefined"));
    }
  }
  if (!caller.is_undefined()) assign("caller", caller);
  RangedText out;
  Flow flow = Flow::kNormal;
  if (st.ok()) st = exec_body(*s.shared_body, out, flow);
  frames_.resize(depth_frames - 1);
  current_ = saved;
  HEARTH_RETURN_IF_ERROR(st);
  return out.take();
}

Result<Value> Interpreter::call(const Value& callee, CallArgs& args, int line, int column) {
  args.line = line;
  args.column = column;
  if (callee.is_undefined()) {
    return error(line, column, undefined_message(callee));
  }
  if (!callee.is_callable()) {
    return error(line, column,
                 std::string("'").append(kind_name(callee)).append("' object is not callable"));
  }
  return callee.fn()(*this, args);
}

Result<CallArgs> Interpreter::eval_args(const Expr& e, size_t first) {
  CallArgs a;
  a.line = e.line;
  a.column = e.column;
  for (size_t i = first; i < e.kids.size(); ++i) {
    HEARTH_ASSIGN_OR_RETURN(Value v, eval(*e.kids[i]));
    if (e.kw[i].empty()) {
      a.args.push_back(std::move(v));
    } else {
      a.kwargs.emplace_back(e.kw[i], std::move(v));
    }
  }
  return a;
}

Result<Value> Interpreter::getattr(const Value& obj, const std::string& name, int line,
                                   int column) {
  switch (obj.kind()) {
    case Kind::kUndefined:
      return error(line, column, undefined_message(obj));
    case Kind::kNamespace:
    case Kind::kDict: {
      if (obj.kind() == Kind::kDict) {
        Value m = method(obj, name);
        if (!m.is_undefined()) return m;
      }
      if (const Value* v = obj.find(name)) return *v;
      return Value::undefined(std::string("'")
                                  .append(kind_name(obj))
                                  .append(" object' has no attribute '")
                                  .append(name)
                                  .append("'"));
    }
    case Kind::kString:
    case Kind::kList:
    case Kind::kTuple: {
      Value m = method(obj, name);
      if (!m.is_undefined()) return m;
      break;
    }
    default:
      break;
  }
  return Value::undefined(std::string("'")
                              .append(kind_name(obj))
                              .append(" object' has no attribute '")
                              .append(name)
                              .append("'"));
}

Result<Value> Interpreter::getitem(const Value& obj, const Value& key, int line, int column) {
  switch (obj.kind()) {
    case Kind::kUndefined:
      return error(line, column, undefined_message(obj));
    case Kind::kDict:
    case Kind::kNamespace: {
      if (const Value* v = obj.find(key)) return *v;
      if (key.is_string()) return getattr(obj, key.str(), line, column);
      return Value::undefined("no item " + to_repr(key));
    }
    case Kind::kList:
    case Kind::kTuple:
    case Kind::kString: {
      if (key.is_integral()) {
        const int64_t n = obj.is_string() ? static_cast<int64_t>(utf8_length(obj.str()))
                                          : static_cast<int64_t>(obj.items().size());
        int64_t i = key.as_int();
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::undefined("index out of range");
        if (obj.is_string()) {
          const size_t b = utf8_offset(obj.str(), static_cast<size_t>(i));
          const size_t e = b + utf8_offset(std::string_view(obj.str()).substr(b), 1);
          return substring(obj, b, e);
        }
        return obj.items()[static_cast<size_t>(i)];
      }
      if (key.is_string()) return getattr(obj, key.str(), line, column);
      if (key.kind() == Kind::kFloat || key.is_sequence() || key.is_mapping() || key.is_none()) {
        return Value::undefined("bad index");
      }
      return Value::undefined();
    }
    default:
      if (key.is_string()) return getattr(obj, key.str(), line, column);
      return Value::undefined(
          std::string("'").append(kind_name(obj)).append("' object is not subscriptable"));
  }
}

Result<Value> Interpreter::slice(const Value& obj, const Value& start, const Value& stop,
                                 const Value& step, int line, int column) {
  if (obj.is_undefined()) return getitem(obj, start, line, column);
  auto as_index = [&](const Value& v, const char* what) -> Result<std::optional<int64_t>> {
    if (v.is_undefined() || v.is_none()) return std::optional<int64_t>();
    if (!v.is_integral()) {
      return error(line, column,
                   std::string("slice ") + what + " indices must be integers or None");
    }
    return std::optional<int64_t>(v.as_int());
  };
  HEARTH_ASSIGN_OR_RETURN(auto b, as_index(start, "start"));
  HEARTH_ASSIGN_OR_RETURN(auto e, as_index(stop, "stop"));
  HEARTH_ASSIGN_OR_RETURN(auto st, as_index(step, "step"));
  const int64_t k = st.value_or(1);
  if (k == 0) return error(line, column, "slice step cannot be zero");
  if (!obj.is_string() && !obj.is_sequence()) {
    return Value::undefined(
        std::string("'").append(kind_name(obj)).append("' object is not subscriptable"));
  }
  const int64_t n = obj.is_string() ? static_cast<int64_t>(utf8_length(obj.str()))
                                    : static_cast<int64_t>(obj.items().size());
  // Python's slice.indices.
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = k < 0 ? -1 : 0;
    } else if (x >= n) {
      x = k < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t lo = clamp(b, k < 0 ? n - 1 : 0);
  const int64_t hi = clamp(e, k < 0 ? -1 : n);
  std::vector<int64_t> idx;
  if (k > 0) {
    for (int64_t i = lo; i < hi; i += k) idx.push_back(i);
  } else {
    for (int64_t i = lo; i > hi; i += k) idx.push_back(i);
  }
  if (obj.is_string()) {
    const std::string& s = obj.str();
    if (k == 1) {
      if (idx.empty()) return Value::string("");
      const size_t bb = utf8_offset(s, static_cast<size_t>(idx.front()));
      const size_t ee = utf8_offset(s, static_cast<size_t>(idx.back()) + 1);
      return substring(obj, bb, ee);
    }
    std::vector<size_t> offs;  // code point starts
    for (size_t i = 0; i < s.size();) {
      offs.push_back(i);
      i += utf8_offset(std::string_view(s).substr(i), 1);
    }
    offs.push_back(s.size());
    std::string out;
    for (int64_t i : idx) out += s.substr(offs[i], offs[i + 1] - offs[i]);
    return derived_string(std::move(out), {&obj});
  }
  List out;
  for (int64_t i : idx) out.push_back(obj.items()[static_cast<size_t>(i)]);
  return obj.kind() == Kind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

Result<Value> Interpreter::eval(const Expr& e) {
  DepthGuard g(depth_);
  if (depth_ > opts_.max_depth) return error(e.line, e.column, "the template nests too deeply");
  switch (e.kind) {
    case ExprKind::kLiteral:
      return e.value;
    case ExprKind::kName:
      return lookup(e.name);
    case ExprKind::kList:
    case ExprKind::kTuple: {
      List items;
      for (const auto& k : e.kids) {
        HEARTH_ASSIGN_OR_RETURN(Value v, eval(*k));
        items.push_back(std::move(v));
      }
      return e.kind == ExprKind::kList ? Value::list(std::move(items))
                                       : Value::tuple(std::move(items));
    }
    case ExprKind::kDict: {
      Value d = Value::dict();
      for (size_t i = 0; i + 1 < e.kids.size(); i += 2) {
        HEARTH_ASSIGN_OR_RETURN(Value k, eval(*e.kids[i]));
        HEARTH_ASSIGN_OR_RETURN(Value v, eval(*e.kids[i + 1]));
        if (k.is_sequence() || k.is_mapping()) {
          return error(e.line, e.column, std::string("unhashable type: '") + kind_name(k) + "'");
        }
        bool replaced = false;
        for (auto& [ok, ov] : d.mutable_entries()) {
          if (equals(ok, k)) {
            ov = v;
            replaced = true;
          }
        }
        if (!replaced) d.mutable_entries().emplace_back(std::move(k), std::move(v));
      }
      return d;
    }
    case ExprKind::kGetAttr: {
      HEARTH_ASSIGN_OR_RETURN(Value obj, eval(*e.kids[0]));
      return getattr(obj, e.name, e.line, e.column);
    }
    case ExprKind::kGetItem: {
      HEARTH_ASSIGN_OR_RETURN(Value obj, eval(*e.kids[0]));
      HEARTH_ASSIGN_OR_RETURN(Value key, eval(*e.kids[1]));
      return getitem(obj, key, e.line, e.column);
    }
    case ExprKind::kSlice: {
      HEARTH_ASSIGN_OR_RETURN(Value obj, eval(*e.kids[0]));
      Value parts[3];
      for (int i = 0; i < 3; ++i) {
        if (e.kids[i + 1]) {
          HEARTH_ASSIGN_OR_RETURN(parts[i], eval(*e.kids[i + 1]));
          if (parts[i].is_undefined()) parts[i] = Value::none();
        } else {
          parts[i] = Value::none();
        }
      }
      return slice(obj, parts[0], parts[1], parts[2], e.line, e.column);
    }
    case ExprKind::kCall:
      return eval_call(e);
    case ExprKind::kFilter: {
      HEARTH_ASSIGN_OR_RETURN(Value input, eval(*e.kids[0]));
      HEARTH_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, 1));
      line_ = e.line;
      column_ = e.column;
      return apply_filter(*this, e.name, input, args);
    }
    case ExprKind::kTest: {
      HEARTH_ASSIGN_OR_RETURN(Value input, eval(*e.kids[0]));
      HEARTH_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, 1));
      line_ = e.line;
      column_ = e.column;
      HEARTH_ASSIGN_OR_RETURN(bool r, apply_test(*this, e.name, input, args));
      return Value::boolean(r != e.negated);
    }
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      HEARTH_ASSIGN_OR_RETURN(Value v, eval(*e.kids[0]));
      if (v.is_undefined()) return error(e.line, e.column, undefined_message(v));
      if (!v.is_number()) {
        return error(e.line, e.column,
                     std::string("bad operand type for unary ") +
                         (e.kind == ExprKind::kNeg ? "-" : "+") + ": '" + kind_name(v) + "'");
      }
      if (e.kind == ExprKind::kPos) return v.is_integral() ? Value::integer(v.as_int()) : v;
      if (v.is_integral()) {
        if (v.as_int() == INT64_MIN) return error(e.line, e.column, "integer overflow");
        return Value::integer(-v.as_int());
      }
      return Value::number(-v.as_double());
    }
    case ExprKind::kNot: {
      HEARTH_ASSIGN_OR_RETURN(Value v, eval(*e.kids[0]));
      return Value::boolean(!truthy(v));
    }
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      HEARTH_ASSIGN_OR_RETURN(Value l, eval(*e.kids[0]));
      const bool t = truthy(l);
      if (e.kind == ExprKind::kAnd ? !t : t) return l;
      return eval(*e.kids[1]);
    }
    case ExprKind::kBinary:
      return eval_binary(e);
    case ExprKind::kCompare:
      return eval_compare(e);
    case ExprKind::kCondExpr: {
      HEARTH_ASSIGN_OR_RETURN(Value c, eval(*e.kids[0]));
      if (truthy(c)) return eval(*e.kids[1]);
      if (e.kids[2]) return eval(*e.kids[2]);
      return Value::undefined();
    }
  }
  return Value::undefined();
}

Result<Value> Interpreter::eval_call(const Expr& e) {
  HEARTH_ASSIGN_OR_RETURN(Value callee, eval(*e.kids[0]));
  HEARTH_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, 1));
  line_ = e.line;
  column_ = e.column;
  return call(callee, args, e.line, e.column);
}

Result<Value> Interpreter::eval_binary(const Expr& e) {
  HEARTH_ASSIGN_OR_RETURN(Value l, eval(*e.kids[0]));
  HEARTH_ASSIGN_OR_RETURN(Value r, eval(*e.kids[1]));
  line_ = e.line;
  column_ = e.column;
  return binary_op(*this, e.name, l, r);
}

Result<Value> Interpreter::eval_compare(const Expr& e) {
  HEARTH_ASSIGN_OR_RETURN(Value l, eval(*e.kids[0]));
  for (size_t i = 1; i < e.kids.size(); ++i) {
    HEARTH_ASSIGN_OR_RETURN(Value r, eval(*e.kids[i]));
    line_ = e.line;
    column_ = e.column;
    HEARTH_ASSIGN_OR_RETURN(bool ok, compare_op(*this, e.kw[i - 1], l, r));
    if (!ok) return Value::boolean(false);
    l = std::move(r);
  }
  return Value::boolean(true);
}

}  // namespace hearth::jinja
