#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "hearth/grammar/grammar.h"

namespace hearth::grammar {
namespace {

Grammar must_parse(const std::string& text) {
  auto g = parse_gbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::move(g).value();
}

bool full_match(const Grammar& g, std::string_view text) {
  Matcher m(g);
  return m.accept_bytes(text) && m.can_end();
}

TEST(Matcher, AcceptsAndRejects) {
  Grammar g = must_parse(
      "root ::= \"[\" (item (\",\" item)*)? \"]\"\n"
      "item ::= [0-9]+ | \"\\\"\" [^\"]* \"\\\"\"");
  for (const char* ok : {"[]", "[1]", "[12,3]", "[\"a,b\",7]", "[\"\"]", "[\"é😀\"]"}) {
    EXPECT_TRUE(full_match(g, ok)) << ok;
  }
  for (const char* bad : {"", "[", "[,]", "[1,]", "[a]", "[1]]", "[\"x]"}) {
    EXPECT_FALSE(full_match(g, bad)) << bad;
  }
}

TEST(Matcher, Repetitions) {
  Grammar g = must_parse("root ::= \"a\"{2,3} \"b\"{2} \"c\"{1,} \"d\"{,2}");
  EXPECT_TRUE(full_match(g, "aabbc"));
  EXPECT_TRUE(full_match(g, "aaabbcccdd"));
  EXPECT_FALSE(full_match(g, "abbc"));
  EXPECT_FALSE(full_match(g, "aaaabbc"));
  EXPECT_FALSE(full_match(g, "aabbb"));
  EXPECT_FALSE(full_match(g, "aabbcddd"));
}

TEST(Matcher, RejectedBytesLeaveTheStateAlone) {
  Grammar g = must_parse("root ::= \"abc\"");
  Matcher m(g);
  EXPECT_TRUE(m.accept_bytes("a"));
  EXPECT_FALSE(m.accept_bytes("bx"));
  EXPECT_TRUE(m.accept_bytes("bc"));
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(m.must_end());
}

TEST(Matcher, Utf8SplitAcrossCalls) {
  Grammar g = must_parse("root ::= [é-ê] \"€\"");
  Matcher m(g);
  const std::string text = "é€";  // C3 A9 E2 82 AC
  for (char c : text) ASSERT_TRUE(m.accept_bytes(std::string(1, c)));
  EXPECT_TRUE(m.can_end());
  Matcher half(g);
  EXPECT_TRUE(half.accept_bytes("\xC3"));
  EXPECT_FALSE(half.can_end());                   // a character in progress
  EXPECT_FALSE(half.accept_bytes("\xA8"));        // U+00E8 is outside [é-ê]
  EXPECT_FALSE(Matcher(g).accept_bytes("\xC4"));  // no completion of C4 is in the class
  // Ill-formed UTF-8 is never accepted, even by "any character".
  Grammar any = must_parse("root ::= .*");
  EXPECT_FALSE(Matcher(any).accept_bytes("\xC0\x80"));      // overlong
  EXPECT_FALSE(Matcher(any).accept_bytes("\xED\xA0\x80"));  // a surrogate
  EXPECT_FALSE(Matcher(any).accept_bytes("\xE0\x80"));      // overlong prefix
  EXPECT_FALSE(Matcher(any).accept_bytes("\x80"));
}

// The mask is exact: a token is allowed iff feeding its bytes succeeds.
TEST(Matcher, MaskAgreesWithAcceptBytes) {
  std::vector<std::string> pieces = {"",  "a",        "b",     "ab",  "ba",  "[",  "]",    ",",
                                     "1", "12",       "\"",    "\"a", "a\"", "é",  "\xC3", "\xA9",
                                     "€", "\xE2\x82", "\xAC]", " ",   "[1",  "1,", "],",   "x"};
  auto vocab = TokenVocab::build(pieces, {0});
  Grammar g = must_parse(
      "root ::= \"[\" (item (\",\" item)*)? \"]\"\n"
      "item ::= [0-9]+ | \"\\\"\" [^\"]* \"\\\"\"");
  std::mt19937 rng(7);
  for (int run = 0; run < 50; ++run) {
    Matcher m(g);
    for (int step = 0; step < 30; ++step) {
      std::vector<uint8_t> mask;
      m.allowed_tokens(*vocab, mask);
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < vocab->size(); ++id) {
        const bool expect = id == 0 ? m.can_end() : m.token_allowed(*vocab, id);
        ASSERT_EQ(mask[static_cast<size_t>(id)] != 0, expect) << "token " << id;
        if (mask[static_cast<size_t>(id)]) allowed.push_back(id);
      }
      if (allowed.empty()) break;
      const int32_t pick = allowed[rng() % allowed.size()];
      if (pick == 0) break;
      ASSERT_TRUE(m.accept_bytes(vocab->bytes(pick)));
    }
  }
}

TEST(Matcher, EogOnlyWhenTheGrammarCanEnd) {
  auto vocab = TokenVocab::build({"</s>", "a", "b"}, {0});
  Grammar g = must_parse("root ::= \"a\" \"b\"?");
  Matcher m(g);
  std::vector<uint8_t> mask;
  m.allowed_tokens(*vocab, mask);
  EXPECT_EQ(mask, (std::vector<uint8_t>{0, 1, 0}));
  ASSERT_TRUE(m.accept_bytes("a"));
  m.allowed_tokens(*vocab, mask);
  EXPECT_EQ(mask, (std::vector<uint8_t>{1, 0, 1}));
  ASSERT_TRUE(m.accept_bytes("b"));
  m.allowed_tokens(*vocab, mask);
  EXPECT_EQ(mask, (std::vector<uint8_t>{1, 0, 0}));
}

// A grammar that is complete before any byte has no stack at all: its mask (whose cache
// key copies the stacks) is end-of-generation only. Under `make asan`'s UBSan this once
// failed: the key copied from the empty stack vector's null data (found by make fuzz).
TEST(Matcher, AGrammarWithNothingLeftAllowsOnlyTheEnd) {
  auto vocab = TokenVocab::build({"</s>", "a", "b"}, {0});
  Matcher m(must_parse("root ::= \"\""));
  std::vector<uint8_t> mask;
  m.allowed_tokens(*vocab, mask);
  EXPECT_EQ(mask, (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.accept_bytes("a"));
  m.allowed_tokens(*vocab, mask);
  EXPECT_EQ(mask, (std::vector<uint8_t>{1, 0, 0}));
}

// Ambiguous grammars do not blow up: equal stacks are merged.
TEST(Matcher, AmbiguityStaysSmall) {
  Grammar g = must_parse("root ::= x* x* x* x*\nx ::= \"a\" | \"a\" \"a\"");
  Matcher m(g);
  EXPECT_TRUE(m.accept_bytes(std::string(2000, 'a')));
  EXPECT_TRUE(m.can_end());
}

// Nested repetition ("a"++++..., ((("a")+)*)+) reaches the same stack by exponentially
// many paths of empty alternatives; each (position, return) pair is expanded once per
// step, so these finish at once instead of doubling per level.
TEST(Matcher, NestedRepetitionStaysLinear) {
  auto nest = [](int depth, const std::string& close) {
    std::string s = "root ::= " + std::string(depth, '(') + "\"a\"";
    for (int i = 0; i < depth; ++i) s += close;
    return s + " \"b\"";
  };
  for (const std::string& text :
       {"root ::= \"a\"" + std::string(40, '+'), "root ::= \"a\"" + std::string(40, '*'),
        "root ::= \"a\"" + std::string(40, '?') + " \"b\"", nest(40, ")+"), nest(40, ")?")}) {
    SCOPED_TRACE(text);
    Grammar g = must_parse(text);
    Matcher m(g);
    std::vector<uint8_t> mask;
    auto vocab = TokenVocab::build({"a", "b", "aa"}, {});
    int accepted = 0;
    for (int i = 0; i < 64 && m.accept_bytes("a"); ++i) {
      m.allowed_tokens(*vocab, mask);
      ++accepted;
    }
    EXPECT_GE(accepted, 1);
  }
  EXPECT_TRUE(full_match(must_parse("root ::= \"a\"++"), "aaaa"));
  EXPECT_FALSE(full_match(must_parse("root ::= \"a\"++"), ""));
  EXPECT_TRUE(full_match(must_parse("root ::= \"a\"?? \"b\""), "b"));
  EXPECT_TRUE(full_match(must_parse("root ::= \"a\"?? \"b\""), "ab"));
  EXPECT_FALSE(full_match(must_parse("root ::= \"a\"?? \"b\""), "aab"));
  EXPECT_TRUE(full_match(must_parse("root ::= \"a\"+? \"b\""), "b"));
  EXPECT_TRUE(full_match(must_parse("root ::= \"a\"?+ \"b\""), "aaab"));
  EXPECT_TRUE(full_match(must_parse("root ::= \"a\"*+"), ""));
  EXPECT_TRUE(full_match(must_parse("root ::= (\"a\"+)+"), "aaaaa"));
  EXPECT_TRUE(full_match(must_parse("root ::= (\"a\" \"b\"?)+"), "aaba"));
  EXPECT_FALSE(full_match(must_parse("root ::= (\"a\" \"b\"?)+"), "abb"));
  // Repeating what can match nothing is still left recursion, with a message.
  EXPECT_FALSE(parse_gbnf("root ::= (\"a\"*)+").ok());
}

}  // namespace
}  // namespace hearth::grammar
