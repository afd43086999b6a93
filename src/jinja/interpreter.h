// Evaluates a parsed template: scopes, loops, macros, output with literal ranges, and
// the limits that keep a hostile template from running away (steps, output, depth).
#pragma once

#include <chrono>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "hearth/jinja/template.h"
#include "jinja/ast.h"

namespace hearth::jinja {

class Interpreter {
 public:
  explicit Interpreter(const RenderOptions& opts) : opts_(opts) {}
  // Breaks reference cycles: namespaces are the only mutable values, so only a namespace
  // can come to hold itself (`{% set ns.x = [ns] %}`); all are emptied at the end.
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders `body` with `globals` as the template's context.
  Result<RenderOutput> render(const Body& body, std::vector<std::pair<std::string, Value>> globals);

  // Called by builtins.
  Result<Value> call(const Value& callee, CallArgs& args, int line, int column);
  Status error(int line, int column, std::string_view what) const;
  Status count_steps(size_t n, int line, int column);            // loop-iteration budget
  Status check_size(size_t bytes, int line, int column) const;   // a string's size
  Status check_items(size_t items, int line, int column) const;  // a list's length
  const RenderOptions& options() const { return opts_; }
  // Every namespace (and loop object) a render creates, so ~Interpreter can empty them.
  void track_namespace(const Value& ns) { namespaces_.push_back(ns); }
  // Current call site (for builtins' error messages).
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  struct Frame {
    int parent = -1;
    std::vector<std::pair<std::string, Value>> vars;
  };

  Status exec_body(const Body& body, RangedText& out, Flow& flow);
  Status exec(const Stmt& s, RangedText& out, Flow& flow);
  Status exec_for(const Stmt& s, RangedText& out);
  Status run_loop(const Stmt& s, const List& items, RangedText& out, int depth);
  Status exec_set(const Stmt& s);
  Result<Value> eval(const Expr& e);
  Result<Value> eval_binary(const Expr& e);
  Result<Value> eval_compare(const Expr& e);
  Result<Value> eval_call(const Expr& e);
  Result<CallArgs> eval_args(const Expr& e, size_t first);
  Result<Value> getattr(const Value& obj, const std::string& name, int line, int column);
  Result<Value> getitem(const Value& obj, const Value& key, int line, int column);
  Result<Value> slice(const Value& obj, const Value& start, const Value& stop, const Value& step,
                      int line, int column);
  Value make_macro(const Stmt& s, int frame);
  // Binds the arguments (and `caller` from a call block) in a frame whose parent is the
  // macro's defining scope, then renders the body.
  Result<Value> call_macro(const Stmt& s, int def_frame, CallArgs& args);

  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v);
  int push_frame(int parent);
  void pop_frame();

  const RenderOptions& opts_;
  std::vector<Frame> frames_;
  int current_ = -1;
  int depth_ = 0;
  size_t steps_ = 0;
  int line_ = 0;
  int column_ = 0;
  std::vector<Value> namespaces_;
  std::chrono::steady_clock::time_point deadline_;
  uint32_t ticks_ = 0;
  Status check_deadline(int line, int column);
};

}  // namespace hearth::jinja
