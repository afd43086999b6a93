#include <gtest/gtest.h>

#include <string>

#include "hearth/grammar/grammar.h"

namespace hearth::grammar {
namespace {

std::string parse_error(const std::string& text) {
  auto g = parse_gbnf(text);
  return g.ok() ? std::string("(parsed)") : g.status().message();
}

TEST(GbnfParser, AcceptsTheSyntax) {
  const char* grammars[] = {
      "root ::= \"a\"",
      "root ::= \"a\" | \"b\" | ",
      "root ::= [a-z0-9_] [^\\n\\x00-\\x1F\"] .",
      "root ::= (\"ab\" | x)* x+ x? x{2} x{1,} x{,3} x{2,4}\nx ::= \"x\"",
      "# a comment\nroot ::= item # trailing\n  item\n\nitem ::= \"\\u00e9\\U0001F600\\t\\\\\\\"\"",
      "root ::= (\n  \"a\"\n  | \"b\"\n)",
      "root ::= \"é€😀\" [α-ω]",
  };
  for (const char* text : grammars) {
    auto g = parse_gbnf(text);
    EXPECT_TRUE(g.ok()) << text << ": " << g.status().message();
  }
}

TEST(GbnfParser, ErrorsNameLineAndColumn) {
  EXPECT_EQ(parse_error("root ::= \"abc"), "line 1, column 10: unterminated string literal");
  EXPECT_EQ(parse_error("root ::= b\n\nb ::= foo"), "line 3, column 7: undefined rule 'foo'");
  EXPECT_EQ(parse_error("root ::= [z-a]"), "line 1, column 12: character range is reversed");
  EXPECT_EQ(parse_error("root ::= \"a\\q\""), "line 1, column 12: unknown escape '\\q'");
  EXPECT_EQ(parse_error("root ::= \"a\" )"), "line 1, column 14: unexpected ')'");
  EXPECT_EQ(parse_error("root ::= ( \"a\""),
            "line 1, column 15: expected ')' before the end of the grammar");
  EXPECT_EQ(parse_error("root ::= \"a\"{3,1}"), "line 1, column 13: repetition {m,n} with n < m");
  EXPECT_EQ(parse_error("root ::= \"a\"\nroot ::= \"b\""),
            "line 2, column 1: rule 'root' is defined twice");
  EXPECT_EQ(parse_error("root = \"a\""), "line 1, column 6: expected '::=' after rule name");
  EXPECT_EQ(parse_error("root ::= <think>"),
            "line 1, column 10: token references (<...>) are not supported");
  EXPECT_EQ(parse_error("x ::= \"a\""), "the grammar has no 'root' rule");
  EXPECT_EQ(parse_error("root ::= [\\x4]"), "line 1, column 14: expected a hex digit, got ']'");
}

TEST(GbnfParser, RejectsLeftRecursion) {
  EXPECT_NE(parse_error("root ::= root \"a\" | \"a\"").find("rule 'root' is left-recursive"),
            std::string::npos);
  // Through a nullable prefix and another rule.
  EXPECT_NE(parse_error("root ::= e x\ne ::= \"\"\nx ::= root | \"a\"").find("left-recursive"),
            std::string::npos);
  // A nullable repeated item loops too.
  EXPECT_NE(parse_error("root ::= (\"a\"?)*").find("left-recursive"), std::string::npos);
  // Right recursion is fine.
  EXPECT_EQ(parse_error("root ::= \"a\" root | \"a\""), "(parsed)");
}

}  // namespace
}  // namespace hearth::grammar
