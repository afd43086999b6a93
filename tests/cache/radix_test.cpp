#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>

#include "cache/radix_tree.h"
#include "hearth/cache/key.h"
#include "test_util.h"

namespace hearth::cache {
namespace {

CacheKey key_of(const std::vector<Token>& t) { return make_key(testing::test_ns(), t); }

size_t lcp(const std::vector<Token>& a, std::span<const Token> b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

TEST(Radix, PartialMatchReturnsShortestCoveringRow) {
  RadixRoot root;
  std::vector<Token> a = {1, 2, 3, 4, 5, 6};
  std::vector<Token> b = {1, 2, 3, 9};
  std::vector<Token> c = {1, 2, 3, 4, 5, 6, 7, 8};
  for (auto* v : {&a, &b, &c}) {
    root = radix_insert(root, std::make_shared<std::vector<Token>>(*v), key_of(*v));
  }
  EXPECT_EQ(radix_row_count(root), 3u);
  std::vector<Token> prompt = {1, 2, 3, 4, 5, 0};
  auto m = radix_longest_prefix(root, prompt);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->depth, 5u);
  EXPECT_EQ(m->key, key_of(a));  // shortest row with 5 shared tokens
  std::vector<Token> full = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  m = radix_longest_prefix(root, full);
  EXPECT_EQ(m->depth, 8u);
  EXPECT_EQ(m->key, key_of(c));
  std::vector<Token> none = {5};
  EXPECT_FALSE(radix_longest_prefix(root, none));
  // Old roots are untouched by later edits (persistence).
  RadixRoot before = root;
  root = radix_remove(root, c, key_of(c));
  EXPECT_EQ(radix_row_count(root), 2u);
  EXPECT_EQ(radix_row_count(before), 3u);
  EXPECT_EQ(radix_longest_prefix(root, full)->depth, 6u);
  EXPECT_EQ(radix_longest_prefix(before, full)->depth, 8u);
}

// Model-based: the tree's answer equals a brute-force scan over all rows.
RC_GTEST_PROP(RadixProp, MatchesBruteForce, ()) {
  auto small_tok = rc::gen::inRange<Token>(0, 4);
  auto seqs = *rc::gen::container<std::vector<std::vector<Token>>>(
      rc::gen::nonEmpty(rc::gen::container<std::vector<Token>>(small_tok)));
  std::map<std::vector<Token>, bool> present;
  RadixRoot root;
  for (const auto& s : seqs) {
    bool remove = present.count(s) && *rc::gen::arbitrary<bool>();
    if (remove) {
      root = radix_remove(root, s, key_of(s));
      present.erase(s);
    } else if (!present.count(s)) {
      root = radix_insert(root, std::make_shared<std::vector<Token>>(s), key_of(s));
      present[s] = true;
    }
  }
  RC_ASSERT(radix_row_count(root) == present.size());
  for (int q = 0; q < 5; ++q) {
    auto prompt = *rc::gen::container<std::vector<Token>>(small_tok);
    size_t best = 0;
    for (const auto& [s, _] : present) best = std::max(best, lcp(s, prompt));
    auto m = radix_longest_prefix(root, prompt);
    if (best == 0) {
      RC_ASSERT(!m.has_value());
      continue;
    }
    RC_ASSERT(m.has_value());
    RC_ASSERT(m->depth == best);
    // The returned row exists and really shares `best` tokens.
    bool found = false;
    for (const auto& [s, _] : present) {
      if (key_of(s) == m->key) {
        found = true;
        RC_ASSERT(lcp(s, prompt) >= best);
        RC_ASSERT(s.size() == m->row_len);
      }
    }
    RC_ASSERT(found);
  }
}

}  // namespace
}  // namespace hearth::cache
