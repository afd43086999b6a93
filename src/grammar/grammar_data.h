// The compiled form of a grammar: every alternative of every rule is a run of elements
// in one flat array, ended by a kEnd element, so a grammar position is one index.
// Repetitions and groups were rewritten into helper rules by the parser; what is left
// is character classes and rule references.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hearth::grammar {

// A set of code points: sorted, merged ranges, optionally negated; an ASCII bitmap for
// the common case.
struct CharClass {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // inclusive, sorted, disjoint
  bool negated = false;
  uint64_t ascii[2] = {0, 0};

  // Sorts and merges the ranges and fills the bitmap.
  void finish();
  bool matches(uint32_t cp) const {
    if (cp < 128) return (ascii[cp >> 6] >> (cp & 63)) & 1;
    return matches_slow(cp);
  }
  bool matches_slow(uint32_t cp) const;
  // Whether some code point in [lo, hi] matches.
  bool intersects(uint32_t lo, uint32_t hi) const;
};

enum class ElemType : uint8_t { kEnd, kClass, kRef };

struct Element {
  ElemType type = ElemType::kEnd;
  uint32_t arg = 0;  // kClass: index into classes; kRef: index into rules
};

struct Rule {
  std::string name;
  std::vector<uint32_t> alts;  // start index of each alternative in elems
};

struct GrammarData {
  std::vector<Element> elems;
  std::vector<CharClass> classes;
  std::vector<Rule> rules;
  uint32_t root = 0;
  // Per position: one position whose remaining elements, up to the kEnd, are the same.
  // Two such positions continue alike, so the matcher keeps one of them in its stacks:
  // nested repetition ("a"+++, ((x)*)+) otherwise makes 2^depth stacks that differ only
  // in which of two equal continuations each frame holds.
  std::vector<uint32_t> same_rest;

  // Fills same_rest from elems and rules.
  void index_same_rest();
};

}  // namespace hearth::grammar
