#include "jinja/parser.h"

#include <charconv>
#include <cstdlib>
#include <initializer_list>

#include "jinja/builtins.h"

namespace hearth::jinja {
namespace {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Result<Body> run() {
    Body body;
    HEARTH_RETURN_IF_ERROR(subparse(body, {}));
    if (peek().type != Tok::kEof) return error(peek(), "unexpected tag");
    return body;
  }

 private:
  // ---- token helpers ----
  const Token& peek(size_t ahead = 0) const {
    const size_t i = std::min(pos_ + ahead, toks_.size() - 1);
    return toks_[i];
  }
  const Token& next() {
    const Token& t = toks_[std::min(pos_, toks_.size() - 1)];
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  bool is_op(const Token& t, std::string_view op) const {
    return t.type == Tok::kOp && t.text == op;
  }
  bool is_name(const Token& t, std::string_view name) const {
    return t.type == Tok::kName && t.text == name;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(peek(), op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(peek(), name)) return false;
    next();
    return true;
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case Tok::kEof:
        return "end of template";
      case Tok::kBlockEnd:
        return "end of statement block";
      case Tok::kVarEnd:
        return "end of print statement";
      case Tok::kData:
        return "template data";
      case Tok::kString:
        return "string";
      default:
        return "'" + t.text + "'";
    }
  }
  static Status error(const Token& t, std::string_view what) {
    return InvalidArgument(at(t.line, t.column, what));
  }
  Status expect_op(std::string_view op) {
    if (skip_op(op)) return OkStatus();
    return error(peek(),
                 std::string("expected '").append(op).append("', got ").append(describe(peek())));
  }
  Status expect_block_end() {
    if (peek().type == Tok::kBlockEnd) {
      next();
      return OkStatus();
    }
    return error(peek(), "expected end of statement block, got " + describe(peek()));
  }
  Result<std::string> expect_name() {
    if (peek().type != Tok::kName) {
      return error(peek(), "expected a name, got " + describe(peek()));
    }
    return next().text;
  }

  struct DepthGuard {
    explicit DepthGuard(int& d) : d_(d) { ++d_; }
    ~DepthGuard() { --d_; }
    int& d_;
  };
  Status check_depth() {
    if (depth_ > kMaxParseDepth) return error(peek(), "template nested too deeply");
    return OkStatus();
  }

  ExprPtr make(ExprKind kind, const Token& t) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = t.line;
    e->column = t.column;
    return e;
  }

  // ---- statements ----

  // Parses until EOF or a block whose first name is in `ends`; leaves the position at
  // that name (after the block begin).
  Status subparse(Body& body, std::initializer_list<std::string_view> ends) {
    DepthGuard g(depth_);
    HEARTH_RETURN_IF_ERROR(check_depth());
    while (true) {
      const Token& t = peek();
      if (t.type == Tok::kEof) {
        if (ends.size() == 0) return OkStatus();
        std::string names;
        for (auto e : ends) {
          if (!names.empty()) names += "' or '";
          names += e;
        }
        return error(t, "unexpected end of template: expected '" + names + "'");
      }
      if (t.type == Tok::kData) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kText;
        s->line = t.line;
        s->column = t.column;
        s->text = next().text;
        body.push_back(std::move(s));
      } else if (t.type == Tok::kVarBegin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kOutput;
        s->line = t.line;
        s->column = t.column;
        HEARTH_ASSIGN_OR_RETURN(s->expr, expression());
        if (peek().type != Tok::kVarEnd) {
          return error(peek(), "expected end of print statement, got " + describe(peek()));
        }
        next();
        body.push_back(std::move(s));
      } else if (t.type == Tok::kBlockBegin) {
        next();
        const Token& kw = peek();
        if (kw.type != Tok::kName) return error(kw, "tag name expected");
        for (auto e : ends) {
          if (kw.text == e) return OkStatus();
        }
        HEARTH_ASSIGN_OR_RETURN(StmtPtr s, statement());
        if (s) body.push_back(std::move(s));
      } else {
        return error(t, "unexpected " + describe(t));
      }
    }
  }

  // Consumes "{% <name>" ... the end tag's name and its "%}".
  Status end_tag(std::string_view name) {
    if (!skip_name(name)) return error(peek(), std::string("expected '").append(name).append("'"));
    return expect_block_end();
  }

  Result<StmtPtr> statement() {
    const Token& kw = next();
    auto s = std::make_unique<Stmt>();
    s->line = kw.line;
    s->column = kw.column;
    const std::string& k = kw.text;
    if (k == "if") return if_stmt(std::move(s));
    if (k == "for") return for_stmt(std::move(s));
    if (k == "set") return set_stmt(std::move(s));
    if (k == "macro") return macro_stmt(std::move(s));
    if (k == "call") return call_stmt(std::move(s));
    if (k == "filter") return filter_stmt(std::move(s));
    if (k == "with") return with_stmt(std::move(s));
    if (k == "break" || k == "continue") {
      if (loop_depth_ == 0) return error(kw, "'" + k + "' outside of a loop");
      s->kind = k == "break" ? StmtKind::kBreak : StmtKind::kContinue;
      HEARTH_RETURN_IF_ERROR(expect_block_end());
      return s;
    }
    if (k == "generation") {
      s->kind = StmtKind::kBody;
      HEARTH_RETURN_IF_ERROR(expect_block_end());
      s->bodies.emplace_back();
      HEARTH_RETURN_IF_ERROR(subparse(s->bodies[0], {"endgeneration"}));
      HEARTH_RETURN_IF_ERROR(end_tag("endgeneration"));
      return s;
    }
    if (k == "include" || k == "import" || k == "from" || k == "extends" || k == "block") {
      return error(kw, "'" + k + "' is not available to chat templates (no template loader)");
    }
    return error(kw, "encountered unknown tag '" + k + "'");
  }

  Result<StmtPtr> if_stmt(StmtPtr s) {
    s->kind = StmtKind::kIf;
    ++if_depth_;
    auto r = if_body(std::move(s));
    --if_depth_;
    return r;
  }

  Result<StmtPtr> if_body(StmtPtr s) {
    while (true) {
      HEARTH_ASSIGN_OR_RETURN(ExprPtr cond, expression());
      s->conds.push_back(std::move(cond));
      HEARTH_RETURN_IF_ERROR(expect_block_end());
      s->bodies.emplace_back();
      HEARTH_RETURN_IF_ERROR(subparse(s->bodies.back(), {"elif", "else", "endif"}));
      const std::string tag = next().text;
      if (tag == "elif") continue;
      if (tag == "else") {
        HEARTH_RETURN_IF_ERROR(expect_block_end());
        s->bodies.emplace_back();
        HEARTH_RETURN_IF_ERROR(subparse(s->bodies.back(), {"endif"}));
        next();
      }
      HEARTH_RETURN_IF_ERROR(expect_block_end());
      return s;
    }
  }

  Status assign_targets(std::vector<std::string>& targets, bool allow_parens) {
    const bool paren = allow_parens && skip_op("(");
    while (true) {
      HEARTH_ASSIGN_OR_RETURN(std::string n, expect_name());
      targets.push_back(std::move(n));
      if (!skip_op(",")) break;
      if (peek().type != Tok::kName) break;
    }
    if (paren) HEARTH_RETURN_IF_ERROR(expect_op(")"));
    return OkStatus();
  }

  Result<StmtPtr> for_stmt(StmtPtr s) {
    s->kind = StmtKind::kFor;
    HEARTH_RETURN_IF_ERROR(assign_targets(s->targets, true));
    if (!skip_name("in")) return error(peek(), "expected 'in', got " + describe(peek()));
    // No conditional expression here: `for x in xs if cond` filters the loop.
    HEARTH_ASSIGN_OR_RETURN(s->expr, or_expr());
    if (skip_name("if")) {
      HEARTH_ASSIGN_OR_RETURN(s->cond, expression());
    }
    if (skip_name("recursive")) s->recursive = true;
    HEARTH_RETURN_IF_ERROR(expect_block_end());
    s->bodies.resize(2);
    ++loop_depth_;
    Status st = subparse(s->bodies[0], {"endfor", "else"});
    --loop_depth_;
    HEARTH_RETURN_IF_ERROR(st);
    if (next().text == "else") {
      HEARTH_RETURN_IF_ERROR(expect_block_end());
      const int saved = loop_depth_;
      loop_depth_ = 0;  // break in a for's else block is not inside that loop
      Status e = subparse(s->bodies[1], {"endfor"});
      loop_depth_ = saved;
      HEARTH_RETURN_IF_ERROR(e);
      next();
    }
    HEARTH_RETURN_IF_ERROR(expect_block_end());
    return s;
  }

  Result<StmtPtr> set_stmt(StmtPtr s) {
    s->kind = StmtKind::kSet;
    HEARTH_ASSIGN_OR_RETURN(std::string first, expect_name());
    if (skip_op(".")) {
      HEARTH_ASSIGN_OR_RETURN(s->text, expect_name());
      s->targets.push_back(std::move(first));
      HEARTH_RETURN_IF_ERROR(expect_op("="));
      HEARTH_ASSIGN_OR_RETURN(s->expr, tuple_expression(true));
      HEARTH_RETURN_IF_ERROR(expect_block_end());
      return s;
    }
    s->targets.push_back(std::move(first));
    while (skip_op(",")) {
      HEARTH_ASSIGN_OR_RETURN(std::string n, expect_name());
      s->targets.push_back(std::move(n));
    }
    if (skip_op("=")) {
      HEARTH_ASSIGN_OR_RETURN(s->expr, tuple_expression(true));
      HEARTH_RETURN_IF_ERROR(expect_block_end());
      return s;
    }
    if (s->targets.size() != 1) return error(peek(), "expected '='");
    // Block set, optionally filtered: {% set x | upper %}...{% endset %}
    s->kind = StmtKind::kSetBlock;
    if (is_op(peek(), "|")) {
      auto hole = make(ExprKind::kName, peek());
      hole->name = kBodyHole;
      HEARTH_ASSIGN_OR_RETURN(s->expr, filter_chain(std::move(hole)));
    }
    HEARTH_RETURN_IF_ERROR(expect_block_end());
    s->bodies.emplace_back();
    HEARTH_RETURN_IF_ERROR(subparse(s->bodies[0], {"endset"}));
    HEARTH_RETURN_IF_ERROR(end_tag("endset"));
    return s;
  }

  Status params(std::vector<MacroParam>& out) {
    HEARTH_RETURN_IF_ERROR(expect_op("("));
    while (!is_op(peek(), ")")) {
      if (!out.empty()) HEARTH_RETURN_IF_ERROR(expect_op(","));
      if (is_op(peek(), ")")) break;
      MacroParam p;
      HEARTH_ASSIGN_OR_RETURN(p.name, expect_name());
      if (skip_op("=")) {
        HEARTH_ASSIGN_OR_RETURN(p.default_value, expression());
      } else if (!out.empty() && out.back().default_value) {
        return error(peek(), "non-default argument follows default argument");
      }
      out.push_back(std::move(p));
    }
    next();
    return OkStatus();
  }

  Result<StmtPtr> macro_stmt(StmtPtr s) {
    s->kind = StmtKind::kMacro;
    HEARTH_ASSIGN_OR_RETURN(s->text, expect_name());
    HEARTH_RETURN_IF_ERROR(params(s->params));
    HEARTH_RETURN_IF_ERROR(expect_block_end());
    s->shared_body = std::make_shared<Body>();
    const int saved = loop_depth_;
    loop_depth_ = 0;
    Status st = subparse(*s->shared_body, {"endmacro"});
    loop_depth_ = saved;
    HEARTH_RETURN_IF_ERROR(st);
    next();
    if (peek().type == Tok::kName) next();  // {% endmacro name %}
    HEARTH_RETURN_IF_ERROR(expect_block_end());
    return s;
  }

  Result<StmtPtr> call_stmt(StmtPtr s) {
    s->kind = StmtKind::kCallBlock;
    if (is_op(peek(), "(")) HEARTH_RETURN_IF_ERROR(params(s->params));
    HEARTH_ASSIGN_OR_RETURN(s->expr, expression());
    if (s->expr->kind != ExprKind::kCall) return error(peek(), "expected call");
    HEARTH_RETURN_IF_ERROR(expect_block_end());
    s->shared_body = std::make_shared<Body>();
    const int saved = loop_depth_;
    loop_depth_ = 0;
    Status st = subparse(*s->shared_body, {"endcall"});
    loop_depth_ = saved;
    HEARTH_RETURN_IF_ERROR(st);
    HEARTH_RETURN_IF_ERROR(end_tag("endcall"));
    return s;
  }

  Result<StmtPtr> filter_stmt(StmtPtr s) {
    s->kind = StmtKind::kFilterBlock;
    auto hole = make(ExprKind::kName, peek());
    hole->name = kBodyHole;
    // The first filter has no leading '|'.
    HEARTH_ASSIGN_OR_RETURN(s->expr, one_filter(std::move(hole)));
    HEARTH_ASSIGN_OR_RETURN(s->expr, filter_chain(std::move(s->expr)));
    HEARTH_RETURN_IF_ERROR(expect_block_end());
    s->bodies.emplace_back();
    HEARTH_RETURN_IF_ERROR(subparse(s->bodies[0], {"endfilter"}));
    HEARTH_RETURN_IF_ERROR(end_tag("endfilter"));
    return s;
  }

  Result<StmtPtr> with_stmt(StmtPtr s) {
    s->kind = StmtKind::kWith;
    while (peek().type != Tok::kBlockEnd) {
      if (!s->targets.empty()) HEARTH_RETURN_IF_ERROR(expect_op(","));
      HEARTH_ASSIGN_OR_RETURN(std::string n, expect_name());
      HEARTH_RETURN_IF_ERROR(expect_op("="));
      HEARTH_ASSIGN_OR_RETURN(ExprPtr v, expression());
      s->targets.push_back(std::move(n));
      s->conds.push_back(std::move(v));
    }
    next();
    s->bodies.emplace_back();
    HEARTH_RETURN_IF_ERROR(subparse(s->bodies[0], {"endwith"}));
    HEARTH_RETURN_IF_ERROR(end_tag("endwith"));
    return s;
  }

  // ---- expressions ----

  // An expression, or a bare tuple "a, b" where one is allowed (set values, for iterables).
  Result<ExprPtr> tuple_expression(bool allow_tuple) {
    const Token& start = peek();
    HEARTH_ASSIGN_OR_RETURN(ExprPtr first, expression());
    if (!allow_tuple || !is_op(peek(), ",")) return first;
    auto t = make(ExprKind::kTuple, start);
    t->kids.push_back(std::move(first));
    while (skip_op(",")) {
      if (peek().type == Tok::kBlockEnd) break;
      HEARTH_ASSIGN_OR_RETURN(ExprPtr e, expression());
      t->kids.push_back(std::move(e));
    }
    return t;
  }

  Result<ExprPtr> expression() {
    DepthGuard g(depth_);
    HEARTH_RETURN_IF_ERROR(check_depth());
    const Token& start = peek();
    HEARTH_ASSIGN_OR_RETURN(ExprPtr e, or_expr());
    while (is_name(peek(), "if")) {
      next();
      auto c = make(ExprKind::kCondExpr, start);
      HEARTH_ASSIGN_OR_RETURN(ExprPtr cond, or_expr());
      ExprPtr otherwise;
      if (skip_name("else")) {
        HEARTH_ASSIGN_OR_RETURN(otherwise, expression());
      }
      c->kids.push_back(std::move(cond));
      c->kids.push_back(std::move(e));
      c->kids.push_back(std::move(otherwise));
      e = std::move(c);
    }
    return e;
  }

  Result<ExprPtr> or_expr() {
    HEARTH_ASSIGN_OR_RETURN(ExprPtr l, and_expr());
    while (is_name(peek(), "or")) {
      auto e = make(ExprKind::kOr, next());
      HEARTH_ASSIGN_OR_RETURN(ExprPtr r, and_expr());
      e->kids.push_back(std::move(l));
      e->kids.push_back(std::move(r));
      l = std::move(e);
    }
    return l;
  }

  Result<ExprPtr> and_expr() {
    HEARTH_ASSIGN_OR_RETURN(ExprPtr l, not_expr());
    while (is_name(peek(), "and")) {
      auto e = make(ExprKind::kAnd, next());
      HEARTH_ASSIGN_OR_RETURN(ExprPtr r, not_expr());
      e->kids.push_back(std::move(l));
      e->kids.push_back(std::move(r));
      l = std::move(e);
    }
    return l;
  }

  Result<ExprPtr> not_expr() {
    if (is_name(peek(), "not")) {
      DepthGuard g(depth_);
      HEARTH_RETURN_IF_ERROR(check_depth());
      auto e = make(ExprKind::kNot, next());
      HEARTH_ASSIGN_OR_RETURN(ExprPtr x, not_expr());
      e->kids.push_back(std::move(x));
      return e;
    }
    return compare();
  }

  Result<ExprPtr> compare() {
    const Token& start = peek();
    HEARTH_ASSIGN_OR_RETURN(ExprPtr first, math1());
    ExprPtr cmp;
    while (true) {
      std::string op;
      const Token& t = peek();
      if (t.type == Tok::kOp && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                 t.text == ">" || t.text == "<=" || t.text == ">=")) {
        op = next().text;
      } else if (is_name(t, "in")) {
        next();
        op = "in";
      } else if (is_name(t, "not") && is_name(peek(1), "in")) {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(ExprKind::kCompare, start);
        cmp->kids.push_back(std::move(first));
      }
      HEARTH_ASSIGN_OR_RETURN(ExprPtr r, math1());
      cmp->kids.push_back(std::move(r));
      cmp->kw.push_back(std::move(op));
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  Result<ExprPtr> binary(ExprPtr l, const Token& op_tok, ExprPtr r) {
    auto e = make(ExprKind::kBinary, op_tok);
    e->name = op_tok.text;
    e->kids.push_back(std::move(l));
    e->kids.push_back(std::move(r));
    return e;
  }

  Result<ExprPtr> math1() {
    HEARTH_ASSIGN_OR_RETURN(ExprPtr l, concat());
    while (is_op(peek(), "+") || is_op(peek(), "-")) {
      const Token& op = next();
      HEARTH_ASSIGN_OR_RETURN(ExprPtr r, concat());
      HEARTH_ASSIGN_OR_RETURN(l, binary(std::move(l), op, std::move(r)));
    }
    return l;
  }

  Result<ExprPtr> concat() {
    HEARTH_ASSIGN_OR_RETURN(ExprPtr l, math2());
    while (is_op(peek(), "~")) {
      const Token& op = next();
      HEARTH_ASSIGN_OR_RETURN(ExprPtr r, math2());
      HEARTH_ASSIGN_OR_RETURN(l, binary(std::move(l), op, std::move(r)));
    }
    return l;
  }

  Result<ExprPtr> math2() {
    HEARTH_ASSIGN_OR_RETURN(ExprPtr l, pow_expr());
    while (is_op(peek(), "*") || is_op(peek(), "/") || is_op(peek(), "//") || is_op(peek(), "%")) {
      const Token& op = next();
      HEARTH_ASSIGN_OR_RETURN(ExprPtr r, pow_expr());
      HEARTH_ASSIGN_OR_RETURN(l, binary(std::move(l), op, std::move(r)));
    }
    return l;
  }

  Result<ExprPtr> pow_expr() {
    HEARTH_ASSIGN_OR_RETURN(ExprPtr l, unary(true));
    while (is_op(peek(), "**")) {
      const Token& op = next();
      HEARTH_ASSIGN_OR_RETURN(ExprPtr r, unary(true));
      HEARTH_ASSIGN_OR_RETURN(l, binary(std::move(l), op, std::move(r)));
    }
    return l;
  }

  Result<ExprPtr> unary(bool with_filter) {
    DepthGuard g(depth_);
    HEARTH_RETURN_IF_ERROR(check_depth());
    ExprPtr node;
    if (is_op(peek(), "-") || is_op(peek(), "+")) {
      const Token& op = next();
      node = make(op.text == "-" ? ExprKind::kNeg : ExprKind::kPos, op);
      HEARTH_ASSIGN_OR_RETURN(ExprPtr x, unary(false));
      node->kids.push_back(std::move(x));
    } else {
      HEARTH_ASSIGN_OR_RETURN(node, primary());
    }
    HEARTH_ASSIGN_OR_RETURN(node, postfix(std::move(node)));
    if (with_filter) {
      HEARTH_ASSIGN_OR_RETURN(node, filter_chain(std::move(node)));
    }
    return node;
  }

  Result<ExprPtr> primary() {
    const Token& t = peek();
    if (t.type == Tok::kName) {
      next();
      if (t.text == "true" || t.text == "True") return literal(t, Value::boolean(true));
      if (t.text == "false" || t.text == "False") return literal(t, Value::boolean(false));
      if (t.text == "none" || t.text == "None") return literal(t, Value::none());
      auto e = make(ExprKind::kName, t);
      e->name = t.text;
      return e;
    }
    if (t.type == Tok::kString) {
      std::string s = next().text;
      while (peek().type == Tok::kString) s += next().text;  // adjacent literals join
      return literal(t, Value::literal(std::move(s)));
    }
    if (t.type == Tok::kInt) {
      next();
      int64_t v = 0;
      auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
      if (r.ec != std::errc()) return error(t, "integer literal out of range");
      return literal(t, Value::integer(v));
    }
    if (t.type == Tok::kFloat) {
      next();
      return literal(t, Value::number(std::strtod(t.text.c_str(), nullptr)));
    }
    if (is_op(t, "(")) {
      next();
      if (skip_op(")")) {
        auto e = make(ExprKind::kTuple, t);
        return e;
      }
      HEARTH_ASSIGN_OR_RETURN(ExprPtr first, expression());
      if (skip_op(")")) return first;
      auto tup = make(ExprKind::kTuple, t);
      tup->kids.push_back(std::move(first));
      while (skip_op(",")) {
        if (is_op(peek(), ")")) break;
        HEARTH_ASSIGN_OR_RETURN(ExprPtr e, expression());
        tup->kids.push_back(std::move(e));
      }
      HEARTH_RETURN_IF_ERROR(expect_op(")"));
      return tup;
    }
    if (is_op(t, "[")) {
      next();
      auto list = make(ExprKind::kList, t);
      while (!is_op(peek(), "]")) {
        if (!list->kids.empty()) {
          HEARTH_RETURN_IF_ERROR(expect_op(","));
          if (is_op(peek(), "]")) break;
        }
        HEARTH_ASSIGN_OR_RETURN(ExprPtr e, expression());
        list->kids.push_back(std::move(e));
      }
      next();
      return list;
    }
    if (is_op(t, "{")) {
      next();
      auto dict = make(ExprKind::kDict, t);
      while (!is_op(peek(), "}")) {
        if (!dict->kids.empty()) {
          HEARTH_RETURN_IF_ERROR(expect_op(","));
          if (is_op(peek(), "}")) break;
        }
        HEARTH_ASSIGN_OR_RETURN(ExprPtr k, expression());
        HEARTH_RETURN_IF_ERROR(expect_op(":"));
        HEARTH_ASSIGN_OR_RETURN(ExprPtr v, expression());
        dict->kids.push_back(std::move(k));
        dict->kids.push_back(std::move(v));
      }
      next();
      return dict;
    }
    return error(t, "unexpected " + describe(t));
  }

  ExprPtr literal(const Token& t, Value v) {
    auto e = make(ExprKind::kLiteral, t);
    e->value = std::move(v);
    return e;
  }

  Result<ExprPtr> postfix(ExprPtr node) {
    while (true) {
      const Token& t = peek();
      if (is_op(t, ".")) {
        next();
        const Token& n = next();
        if (n.type == Tok::kName) {
          auto e = make(ExprKind::kGetAttr, t);
          e->name = n.text;
          e->kids.push_back(std::move(node));
          node = std::move(e);
        } else if (n.type == Tok::kInt) {
          auto e = make(ExprKind::kGetItem, t);
          e->kids.push_back(std::move(node));
          e->kids.push_back(literal(n, Value::integer(std::atoll(n.text.c_str()))));
          node = std::move(e);
        } else {
          return error(n, "expected name or number after '.'");
        }
      } else if (is_op(t, "[")) {
        next();
        HEARTH_ASSIGN_OR_RETURN(node, subscript(std::move(node), t));
      } else if (is_op(t, "(")) {
        HEARTH_ASSIGN_OR_RETURN(node, call(std::move(node)));
      } else {
        return node;
      }
    }
  }

  Result<ExprPtr> subscript(ExprPtr node, const Token& t) {
    ExprPtr parts[3];
    bool is_slice = false;
    for (int i = 0; i < 3; ++i) {
      if (!is_op(peek(), ":") && !is_op(peek(), "]")) {
        HEARTH_ASSIGN_OR_RETURN(parts[i], expression());
      }
      if (i < 2 && skip_op(":")) {
        is_slice = true;
        continue;
      }
      break;
    }
    HEARTH_RETURN_IF_ERROR(expect_op("]"));
    if (!is_slice) {
      if (!parts[0]) return error(t, "expected an index");
      auto e = make(ExprKind::kGetItem, t);
      e->kids.push_back(std::move(node));
      e->kids.push_back(std::move(parts[0]));
      return e;
    }
    auto e = make(ExprKind::kSlice, t);
    e->kids.push_back(std::move(node));
    for (auto& p : parts) e->kids.push_back(std::move(p));
    return e;
  }

  // "(args)" appended to e->kids, keyword names in e->kw.
  Status call_args(Expr& e) {
    HEARTH_RETURN_IF_ERROR(expect_op("("));
    bool first = true;
    while (!is_op(peek(), ")")) {
      if (!first) {
        HEARTH_RETURN_IF_ERROR(expect_op(","));
        if (is_op(peek(), ")")) break;
      }
      first = false;
      std::string kw;
      if (peek().type == Tok::kName && is_op(peek(1), "=")) {
        kw = next().text;
        next();
      } else if (!e.kw.empty() && !e.kw.back().empty()) {
        return error(peek(), "positional argument follows keyword argument");
      }
      HEARTH_ASSIGN_OR_RETURN(ExprPtr a, expression());
      e.kids.push_back(std::move(a));
      e.kw.push_back(std::move(kw));
    }
    next();
    return OkStatus();
  }

  Result<ExprPtr> call(ExprPtr callee) {
    auto e = make(ExprKind::kCall, peek());
    e->kids.push_back(std::move(callee));
    e->kw.push_back("");  // the callee's slot
    HEARTH_RETURN_IF_ERROR(call_args(*e));
    return e;
  }

  Result<ExprPtr> one_filter(ExprPtr node) {
    const Token& t = peek();
    HEARTH_ASSIGN_OR_RETURN(std::string name, expect_name());
    while (is_op(peek(), ".") && peek(1).type == Tok::kName) {
      next();
      name.append(".").append(next().text);
    }
    // Like Jinja2, an unknown filter is a compile error outside {% if %} blocks and a
    // render error (when reached) inside them.
    if (!is_filter_name(name) && if_depth_ == 0) {
      return error(t, "no filter named '" + name + "'");
    }
    auto f = make(ExprKind::kFilter, t);
    f->name = std::move(name);
    f->kids.push_back(std::move(node));
    f->kw.push_back("");
    if (is_op(peek(), "(")) HEARTH_RETURN_IF_ERROR(call_args(*f));
    return f;
  }

  Result<ExprPtr> filter_chain(ExprPtr node) {
    while (true) {
      if (skip_op("|")) {
        HEARTH_ASSIGN_OR_RETURN(node, one_filter(std::move(node)));
      } else if (is_name(peek(), "is")) {
        const Token& t = next();
        const bool negated = skip_name("not");
        const Token& nt = peek();
        HEARTH_ASSIGN_OR_RETURN(std::string name, expect_name());
        if (!is_test_name(name) && if_depth_ == 0) {
          return error(nt, "no test named '" + name + "'");
        }
        auto e = make(ExprKind::kTest, t);
        e->name = std::move(name);
        e->negated = negated;
        e->kids.push_back(std::move(node));
        e->kw.push_back("");
        const Token& a = peek();
        if (is_op(a, "(")) {
          HEARTH_RETURN_IF_ERROR(call_args(*e));
        } else if ((a.type == Tok::kName && a.text != "else" && a.text != "or" && a.text != "and" &&
                    a.text != "if" && a.text != "in" && a.text != "is" && a.text != "not" &&
                    a.text != "recursive") ||
                   a.type == Tok::kString || a.type == Tok::kInt || a.type == Tok::kFloat ||
                   is_op(a, "[") || is_op(a, "{") || is_op(a, "-") || is_op(a, "+")) {
          // One bare argument: `x is divisibleby 3`, `x is sameas none`.
          HEARTH_ASSIGN_OR_RETURN(ExprPtr arg, unary(false));
          e->kids.push_back(std::move(arg));
          e->kw.push_back("");
        }
        node = std::move(e);
      } else if (is_op(peek(), "(")) {
        HEARTH_ASSIGN_OR_RETURN(node, call(std::move(node)));
      } else {
        return node;
      }
    }
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  int if_depth_ = 0;
};

}  // namespace

Result<Body> parse(std::vector<Token> tokens) {
  if (tokens.empty() || tokens.back().type != Tok::kEof) {
    Token eof;
    tokens.push_back(eof);
  }
  return Parser(std::move(tokens)).run();
}

}  // namespace hearth::jinja
