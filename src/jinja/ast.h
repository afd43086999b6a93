// The template's syntax tree: expressions and statements, each node carrying the line
// and column it starts at so evaluation errors can name them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jinja/value.h"

namespace hearth::jinja {

enum class ExprKind : uint8_t {
  kLiteral,   // value
  kName,      // name
  kList,      // kids
  kTuple,     // kids
  kDict,      // kids: key, value, key, value...
  kGetAttr,   // kids[0] . name
  kGetItem,   // kids[0] [ kids[1] ]
  kSlice,     // kids[0] [ kids[1] : kids[2] : kids[3] ] (null kids allowed)
  kCall,      // kids[0] ( args ) ; args in kids[1..], keyword names in kw (same order)
  kFilter,    // kids[0] | name ( args )
  kTest,      // kids[0] is [not] name ( args ); negated
  kNeg,       // - kids[0]
  kPos,       // + kids[0]
  kNot,       // not kids[0]
  kAnd,       // kids[0] and kids[1]
  kOr,        // kids[0] or kids[1]
  kBinary,    // kids[0] op kids[1]: + - * / // % ** ~
  kCompare,   // kids[0] op[0] kids[1] op[1] kids[2] ... (ops in kw)
  kCondExpr,  // kids[1] if kids[0] else kids[2] (kids[2] may be null)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  int line = 0;
  int column = 0;
  Value value;
  std::string name;  // name, attribute, filter / test name, operator
  std::vector<ExprPtr> kids;
  std::vector<std::string> kw;  // keyword names of call arguments ("" = positional)
  bool negated = false;
};

enum class StmtKind : uint8_t {
  kText,       // text
  kOutput,     // {{ expr }}
  kIf,         // conds[i] -> bodies[i]; bodies.back() is else when bodies > conds
  kFor,        // targets in expr [if cond] body [else]
  kSet,        // targets = expr, or ns.attr = expr (attr non-empty)
  kSetBlock,   // {% set name %}body{% endset %}, optional filters (expr with kName hole)
  kMacro,      // name(params) body
  kCallBlock,  // {% call macro(args) %}body{% endcall %}
  kFilterBlock,
  kWith,
  kBreak,
  kContinue,
  kBody,  // a plain body (the generation tag)
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null when required
};

struct Stmt {
  StmtKind kind = StmtKind::kText;
  int line = 0;
  int column = 0;
  std::string text;                  // kText; kSet attribute; kMacro name
  std::vector<std::string> targets;  // for / set / with names
  ExprPtr expr;                      // output, set value, for iterable, call-block call
  ExprPtr cond;                      // for filter
  std::vector<ExprPtr> conds;        // if conditions; with values
  std::vector<Body> bodies;          // if bodies; for: body, else
  std::vector<MacroParam> params;    // macro / call-block parameters
  bool recursive = false;
  std::shared_ptr<Body> shared_body;  // macro bodies outlive the render of their definition
};

}  // namespace hearth::jinja
