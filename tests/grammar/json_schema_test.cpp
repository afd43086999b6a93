// JSON Schema -> GBNF, checked by generating: random walks through the grammar's token
// masks produce JSON texts that must parse and pass an independent validator
// (tests/testing/json_schema_check.*), and instances that break the schema are refused.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "hearth/grammar/grammar.h"
#include "hearth/grammar/json_schema.h"
#include "testing/json_schema_check.h"

namespace hearth::grammar {
namespace {

using nlohmann::json;

Grammar schema_grammar(const json& schema) {
  auto gbnf = json_schema_to_gbnf(schema);
  EXPECT_TRUE(gbnf.ok()) << gbnf.status().message();
  auto g = parse_gbnf(gbnf.value());
  EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << gbnf.value();
  return std::move(g).value();
}

// A small vocabulary: every printable ASCII character, some UTF-8, some multi-byte
// pieces (and split UTF-8) so tokens cross grammar boundaries.
std::shared_ptr<const TokenVocab> test_vocab() {
  std::vector<std::string> v = {"<eos>"};
  for (int c = 32; c < 127; ++c) v.emplace_back(1, static_cast<char>(c));
  for (const char* p :
       {"\n",      "\t",   "é",    "😀",     "\xE2\x82", "\xAC", "\":",        "\": \"",    "\",",
        "{\"",     "true", "null", "false", "12",       "-3",   ".5",         "e+",        "\\n",
        "\\u00e9", "\"}",  "]}",   "[{",    "ab",       "name", "2024-01-02", "T10:20:30Z"}) {
    v.emplace_back(p);
  }
  return TokenVocab::build(v, {0});
}

struct Walk {
  std::string text;
  bool ended = false;
};

// Picks uniformly among the allowed tokens; stops at EOG.
Walk random_walk(const Grammar& g, const TokenVocab& vocab, std::mt19937& rng, int max_steps) {
  Matcher m(g);
  Walk w;
  std::vector<uint8_t> mask;
  for (int step = 0; step < max_steps; ++step) {
    m.allowed_tokens(vocab, mask);
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < vocab.size(); ++id) {
      if (mask[static_cast<size_t>(id)]) allowed.push_back(id);
    }
    if (allowed.empty()) return w;  // a dead end: the test fails on !ended
    const int32_t pick = allowed[rng() % allowed.size()];
    if (vocab.is_eog(pick)) {
      w.ended = true;
      return w;
    }
    EXPECT_TRUE(m.accept_bytes(vocab.bytes(pick)));
    w.text += vocab.bytes(pick);
  }
  return w;
}

void expect_generated_valid(const json& schema, int walks = 200) {
  Grammar g = schema_grammar(schema);
  auto vocab = test_vocab();
  std::mt19937 rng(42);
  int ended = 0;
  for (int k = 0; k < walks; ++k) {
    Walk w = random_walk(g, *vocab, rng, 3000);
    if (!w.ended) continue;
    ++ended;
    json parsed = json::parse(w.text, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(parsed.is_discarded()) << "not JSON: " << w.text;
    EXPECT_EQ(testing::validate_json_schema(parsed, schema, schema), "") << w.text;
  }
  EXPECT_GT(ended, walks / 2) << schema.dump();
}

bool schema_accepts(const json& schema, const std::string& text) {
  Grammar g = schema_grammar(schema);
  Matcher m(g);
  return m.accept_bytes(text) && m.can_end();
}

TEST(JsonSchema, ObjectsWithRequiredAndOptional) {
  const json schema = json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "maxLength": 8},
      "age": {"type": "integer", "minimum": 0, "maximum": 130},
      "tags": {"type": "array", "items": {"enum": ["a", "b", 3, null]}, "maxItems": 3},
      "ok": {"type": "boolean"}
    },
    "required": ["name", "age"],
    "additionalProperties": false
  })");
  expect_generated_valid(schema);
  EXPECT_TRUE(schema_accepts(schema, R"({"name": "x", "age": 130, "ok": true})"));
  EXPECT_TRUE(schema_accepts(schema, R"({"name":"x","age":0,"tags":["a",3,null]})"));
  EXPECT_FALSE(schema_accepts(schema, R"({"name": "x"})"));              // missing age
  EXPECT_FALSE(schema_accepts(schema, R"({"name": "x", "age": 131})"));  // above maximum
  EXPECT_FALSE(schema_accepts(schema, R"({"name": "x", "age": -1})"));
  EXPECT_FALSE(schema_accepts(schema, R"({"name": "123456789", "age": 1})"));  // too long
  EXPECT_FALSE(schema_accepts(schema, R"({"name": "x", "age": 1, "zz": 1})"));
  EXPECT_FALSE(schema_accepts(schema, R"({"name": "x", "age": 1, "tags": ["c"]})"));
}

TEST(JsonSchema, OnlyOptionalProperties) {
  const json schema = json::parse(R"({"type": "object", "properties": {
      "a": {"type": "number"}, "b": {"type": "null"}, "c": {"const": "k"}}})");
  expect_generated_valid(schema);
  EXPECT_TRUE(schema_accepts(schema, "{}"));
  EXPECT_TRUE(schema_accepts(schema, R"({"b": null})"));
  EXPECT_TRUE(schema_accepts(schema, R"({"a": -1.5e3, "c": "k"})"));
  EXPECT_FALSE(schema_accepts(schema, R"({, "b": null})"));
}

TEST(JsonSchema, IntegerRanges) {
  for (auto [lo, hi] : std::vector<std::pair<int, int>>{
           {-25, 7}, {3, 1234}, {-100, -17}, {0, 9}, {95, 105}, {-5, -5}}) {
    const json schema = {{"type", "integer"}, {"minimum", lo}, {"maximum", hi}};
    for (int v = lo - 30; v <= hi + 30; ++v) {
      EXPECT_EQ(schema_accepts(schema, std::to_string(v)), v >= lo && v <= hi)
          << v << " in [" << lo << ", " << hi << "]";
    }
  }
  const json open_low = {{"type", "integer"}, {"exclusiveMinimum", 41}};
  EXPECT_FALSE(schema_accepts(open_low, "41"));
  EXPECT_TRUE(schema_accepts(open_low, "42"));
  EXPECT_TRUE(schema_accepts(open_low, "100000"));
  EXPECT_FALSE(schema_accepts(open_low, "042"));
}

TEST(JsonSchema, StringsPatternsAndFormats) {
  const json schema = json::parse(R"({"type": "object", "properties": {
      "code": {"type": "string", "pattern": "^[A-Z]{2}-\\d{3}(x|yz)?$"},
      "when": {"type": "string", "format": "date-time"},
      "id": {"type": "string", "format": "uuid"},
      "short": {"type": "string", "minLength": 2, "maxLength": 4}
    }, "required": ["code", "when", "id", "short"]})");
  expect_generated_valid(schema);
  EXPECT_TRUE(schema_accepts(
      schema,
      R"({"code": "AB-123yz", "when": "2024-01-02T10:20:30Z", "id": "0123abcd-0000-1111-2222-333344445555", "short": "\u00e9\n"})"));
  EXPECT_FALSE(schema_accepts(
      schema,
      R"({"code": "AB-12", "when": "2024-01-02T10:20:30Z", "id": "0123abcd-0000-1111-2222-333344445555", "short": "ab"})"));
}

TEST(JsonSchema, RefsAnyOfAllOfNullable) {
  const json schema = json::parse(R"({
    "$defs": {
      "node": {"type": "object", "properties": {
        "v": {"type": "integer", "minimum": 0, "maximum": 9},
        "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}
      }, "required": ["v", "next"]},
      "base": {"type": "object", "properties": {"k": {"type": "string", "maxLength": 3}}, "required": ["k"]}
    },
    "type": "object",
    "properties": {
      "list": {"$ref": "#/$defs/node"},
      "both": {"allOf": [{"$ref": "#/$defs/base"}, {"properties": {"n": {"type": "boolean"}}, "required": ["n"]}]},
      "maybe": {"type": "string", "maxLength": 2, "nullable": true},
      "pair": {"type": "array", "prefixItems": [{"type": "integer", "minimum": 0, "maximum": 3}, {"type": "boolean"}], "items": false}
    },
    "required": ["list", "both", "maybe", "pair"]
  })");
  expect_generated_valid(schema);
  EXPECT_TRUE(schema_accepts(
      schema,
      R"({"list": {"v": 1, "next": {"v": 2, "next": null}}, "both": {"k": "a", "n": true}, "maybe": null, "pair": [3, false]})"));
}

TEST(JsonSchema, ArraysBounds) {
  const json schema = json::parse(
      R"({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 99}, "minItems": 2, "maxItems": 4})");
  expect_generated_valid(schema);
  EXPECT_FALSE(schema_accepts(schema, "[1]"));
  EXPECT_TRUE(schema_accepts(schema, "[1, 2]"));
  EXPECT_TRUE(schema_accepts(schema, "[1,2,3,4]"));
  EXPECT_FALSE(schema_accepts(schema, "[1,2,3,4,5]"));
}

TEST(JsonSchema, JsonObjectAcceptsAnyObject) {
  auto g = parse_gbnf(json_object_gbnf());
  ASSERT_TRUE(g.ok()) << g.status().message();
  Matcher m(g.value());
  EXPECT_TRUE(m.accept_bytes(R"({"a": [1, {"b": null}], "c": "\u00e9"})") && m.can_end());
  Matcher n(g.value());
  EXPECT_FALSE(n.accept_bytes("[1]"));
}

// Several schemas in one grammar: each under its own start rule, primitives once.
TEST(JsonSchema, SchemasComposeUnderTheirOwnRuleNames) {
  const json a = json::parse(
      R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 5}}, "required": ["city"]})");
  const json b = json::parse(
      R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 3}}, "required": ["n"]})");
  auto ra = json_schema_rules(a, "tool-a");
  auto rb = json_schema_rules(b, "tool-b");
  ASSERT_TRUE(ra.ok() && rb.ok());
  const std::string gbnf = "root ::= \"<call>\" (tool-a | tool-b) \"</call>\"\n" + ra.value() +
                           rb.value() + json_schema_primitives();
  auto g = parse_gbnf(gbnf);
  ASSERT_TRUE(g.ok()) << g.status().message() << "\n" << gbnf;
  auto full = [&](const std::string& text) {
    Matcher m(g.value());
    return m.accept_bytes(text) && m.can_end();
  };
  EXPECT_TRUE(full(R"(<call>{"city": "Paris"}</call>)"));
  EXPECT_TRUE(full(R"(<call>{"n": 2}</call>)"));
  EXPECT_FALSE(full(R"(<call>{"n": 4}</call>)"));
  EXPECT_FALSE(full(R"(<call>{"city": "Paris", "n": 2}</call>)"));
  EXPECT_FALSE(json_schema_rules(a, "ws").ok());
  EXPECT_FALSE(json_schema_rules(a, "json-x").ok());
  EXPECT_FALSE(json_schema_rules(a, "a b").ok());
}

TEST(JsonSchema, UnsupportedKeywordsAreErrorsNamingThem) {
  auto err = [](const char* schema) {
    auto r = json_schema_to_gbnf(json::parse(schema));
    return r.ok() ? std::string("(converted)") : r.status().message();
  };
  EXPECT_EQ(
      err(R"({"type": "object", "properties": {"a": {"type": "string", "contentEncoding": "base64"}}})"),
      "unsupported JSON Schema keyword 'contentEncoding' at '#/properties/a'");
  EXPECT_EQ(err(R"({"type": "array", "uniqueItems": true})"),
            "unsupported JSON Schema keyword 'uniqueItems' at '#'");
  EXPECT_EQ(err(R"({"type": "number", "multipleOf": 3})"),
            "unsupported JSON Schema keyword 'multipleOf' at '#'");
  EXPECT_EQ(err(R"({"type": "strin"})"), "unknown type 'strin' at '#/type'");
  EXPECT_EQ(err(R"({"$ref": "#/$defs/missing"})"),
            "$ref '#/$defs/missing' points at nothing at '#'");
  EXPECT_NE(err(R"({"type": "string", "pattern": "(a)\\1"})").find("backreference"),
            std::string::npos);
  EXPECT_NE(err(R"({"type": "string", "format": "hostname"})").find("format"), std::string::npos);
  EXPECT_EQ(err(R"({"type": "object", "required": ["x"]})"),
            "required property 'x' is not in properties at '#/required'");
}

}  // namespace
}  // namespace hearth::grammar
