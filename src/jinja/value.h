// The value type of hearth's Jinja evaluator: Python's values as Jinja2 sees them in a
// chat template (None, bool, int, float, str, list/tuple, dict, Jinja's Undefined, the
// namespace() object, macros and builtin callables). Strings carry the byte ranges that
// came from the template's own text (see hearth::TextRange), so a render can tell
// template markup from message content.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hearth/status.h"
#include "hearth/text_range.h"

namespace hearth::jinja {

class Value;
class Interpreter;
struct CallArgs;

using List = std::vector<Value>;
using Dict = std::vector<std::pair<Value, Value>>;  // insertion-ordered, like a Python dict
// A builtin: a global function, a bound method or a macro. `self` is unused by globals.
using Builtin = std::function<Result<Value>(Interpreter&, CallArgs&)>;

enum class Kind : uint8_t {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,
  kTuple,
  kDict,
  kNamespace,
  kCallable,
};

class Value {
 public:
  Value() = default;  // Undefined
  // `why` says what is undefined when the value is used ("'x' is undefined").
  static Value undefined(std::string why = {}) {
    Value v;
    v.str_ = std::move(why);
    return v;
  }
  static Value none() { return Value(Kind::kNone); }
  static Value boolean(bool b) {
    Value v(Kind::kBool);
    v.int_ = b ? 1 : 0;
    return v;
  }
  static Value integer(int64_t i) {
    Value v(Kind::kInt);
    v.int_ = i;
    return v;
  }
  static Value number(double d) {
    Value v(Kind::kFloat);
    v.float_ = d;
    return v;
  }
  // Text from outside the template (message content): no literal range.
  static Value string(std::string s) {
    Value v(Kind::kString);
    v.str_ = std::move(s);
    return v;
  }
  // Text that is the template's own (literals, template data, trusted variables).
  static Value literal(std::string s) {
    Value v(Kind::kString);
    if (!s.empty()) v.ranges_.push_back({0, s.size()});
    v.str_ = std::move(s);
    return v;
  }
  static Value string_with_ranges(std::string s, std::vector<TextRange> ranges) {
    Value v(Kind::kString);
    v.str_ = std::move(s);
    v.ranges_ = std::move(ranges);
    return v;
  }
  static Value list(List items = {}) {
    Value v(Kind::kList);
    v.list_ = std::make_shared<List>(std::move(items));
    return v;
  }
  static Value tuple(List items) {
    Value v = list(std::move(items));
    v.kind_ = Kind::kTuple;
    return v;
  }
  static Value dict(Dict items = {}) {
    Value v(Kind::kDict);
    v.dict_ = std::make_shared<Dict>(std::move(items));
    return v;
  }
  static Value name_space(Dict items) {
    Value v = dict(std::move(items));
    v.kind_ = Kind::kNamespace;
    return v;
  }
  static Value callable(std::string name, Builtin fn) {
    Value v(Kind::kCallable);
    v.str_ = std::move(name);
    v.fn_ = std::make_shared<Builtin>(std::move(fn));
    return v;
  }

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_number() const {
    return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool;
  }
  bool is_integral() const { return kind_ == Kind::kInt || kind_ == Kind::kBool; }
  bool is_sequence() const { return kind_ == Kind::kList || kind_ == Kind::kTuple; }
  bool is_mapping() const { return kind_ == Kind::kDict; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }
  double as_double() const { return kind_ == Kind::kFloat ? float_ : static_cast<double>(int_); }
  const std::string& str() const { return str_; }  // string text; Undefined: why
  const std::vector<TextRange>& ranges() const { return ranges_; }
  bool fully_literal() const {
    return !str_.empty() && ranges_.size() == 1 && ranges_[0].begin == 0 &&
           ranges_[0].end == str_.size();
  }
  const List& items() const { return *list_; }
  List& mutable_items() { return *list_; }
  const Dict& entries() const { return *dict_; }
  Dict& mutable_entries() { return *dict_; }
  const Builtin& fn() const { return *fn_; }
  const std::string& callable_name() const { return str_; }

  // dict / namespace lookup by string key; nullptr when absent.
  const Value* find(std::string_view key) const;
  const Value* find(const Value& key) const;
  // Identity of containers (Jinja's `sameas`).
  const void* identity() const;

 private:
  explicit Value(Kind k) : kind_(k) {}

  Kind kind_ = Kind::kUndefined;
  int64_t int_ = 0;
  double float_ = 0;
  std::string str_;
  std::vector<TextRange> ranges_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Builtin> fn_;
};

// Arguments of a call: positional then keyword, as written.
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
  int line = 0;
  int column = 0;

  // The parameter `name` at position `pos` (or by keyword); nullptr when not given.
  const Value* get(size_t pos, std::string_view name) const;
};

// The error for using an Undefined: what it says, or a generic message.
std::string undefined_message(const Value& undefined);
// Python's truth value.
bool truthy(const Value& v);
// Python's ==.
bool equals(const Value& a, const Value& b);
// Python's str() and repr() as Jinja2 prints values (None, True, [1, 'a'], {'k': 2}).
std::string to_str(const Value& v);
std::string to_repr(const Value& v);
// Python's repr() of a float ("1.0", "1e+16", "0.1").
std::string float_repr(double d);
const char* kind_name(const Value& v);  // Python type names: "str", "NoneType", ...

// Unicode code points of UTF-8 text (invalid bytes count as one each).
size_t utf8_length(std::string_view s);
// Byte offset of code point `index` (clamped to the text's size).
size_t utf8_offset(std::string_view s, size_t index);

// A substring of a string value, keeping the literal ranges that fall inside it.
Value substring(const Value& s, size_t byte_begin, size_t byte_end);
// A string derived from `inputs`: literal only when every input string is wholly literal.
Value derived_string(std::string text, std::initializer_list<const Value*> inputs);

// A string builder that keeps literal ranges: appends values and merges ranges.
class RangedText {
 public:
  void append(const Value& string_value);
  void append_literal(std::string_view s);
  void append_plain(std::string_view s);
  size_t size() const { return text_.size(); }
  const std::string& text() const { return text_; }
  std::vector<TextRange>& ranges() { return ranges_; }
  Value take();

 private:
  void add_range(size_t begin, size_t end);
  std::string text_;
  std::vector<TextRange> ranges_;
};

}  // namespace hearth::jinja
