// Grammar-constrained generation: GBNF grammars (llama.cpp's syntax), a matcher that
// follows a grammar over code points, and the token mask it computes against a vocabulary.
//
//   auto g = hearth::grammar::parse_gbnf(text);          // Result: errors name line:column
//   auto vocab = hearth::grammar::TokenVocab::build(token_bytes, eog_ids);  // once per model
//   hearth::grammar::Matcher m(*g);
//   m.allowed_tokens(*vocab, mask);  // mask[id] = 1 where the token may come next
//   m.accept_bytes(piece);           // after the token is chosen
//
// docs/grammar.md describes the design (stack sets, the token trie, the mask cache).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hearth/status.h"

namespace hearth::grammar {

struct GrammarData;  // the compiled rules (src/grammar/grammar_data.h)

// A parsed, compiled grammar: immutable, shared by every matcher that follows it.
class Grammar {
 public:
  explicit Grammar(std::shared_ptr<const GrammarData> data) : data_(std::move(data)) {}
  const GrammarData& data() const { return *data_; }
  const std::shared_ptr<const GrammarData>& shared() const { return data_; }
  size_t rule_count() const;

 private:
  std::shared_ptr<const GrammarData> data_;
};

// Parses GBNF text; the start rule is `root`. Errors: InvalidArgument
// "line L, column C: <what>" (a syntax error), or naming the rule (undefined rule, no
// root, left recursion).
Result<Grammar> parse_gbnf(std::string_view text);

// A vocabulary's token bytes in a byte trie, built once per model and shared.
class TokenVocab {
 public:
  // token_bytes[id]: the bytes token `id` stands for; "" for a token that can never be
  // matched as text (control tokens). eog: the end-of-generation ids, allowed exactly
  // when the grammar can end.
  static std::shared_ptr<const TokenVocab> build(std::vector<std::string> token_bytes,
                                                 std::vector<int32_t> eog);
  int32_t size() const { return static_cast<int32_t>(bytes_.size()); }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  const std::vector<int32_t>& eog() const { return eog_; }
  bool is_eog(int32_t id) const;
  int32_t max_bytes() const { return max_bytes_; }  // the longest token's byte count

  // Trie: node 0 is the root; children are sorted by byte.
  struct Node {
    uint32_t first_child = 0;   // 0 = none
    uint32_t next_sibling = 0;  // 0 = none
    uint32_t tokens_begin = 0;  // into token_ids(): the tokens whose bytes end here
    uint32_t tokens_end = 0;
    uint8_t byte = 0;
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& token_ids() const { return token_ids_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<int32_t> eog_;
  std::vector<Node> nodes_;
  std::vector<int32_t> token_ids_;
  int32_t max_bytes_ = 0;
};

// Follows one grammar over a stream of bytes (UTF-8; a character may be split across
// calls). Movable; not thread-safe.
class Matcher {
 public:
  explicit Matcher(const Grammar& grammar);
  ~Matcher();
  Matcher(Matcher&&) noexcept;
  Matcher& operator=(Matcher&&) noexcept;

  // Feeds bytes; false (and the state unchanged) when the grammar rejects them.
  bool accept_bytes(std::string_view bytes);
  // True when the text so far is a complete sentence of the grammar.
  bool can_end() const;
  // True when nothing but the end may follow.
  bool must_end() const;
  // mask (resized to vocab.size()): 1 for each token whose bytes the grammar accepts
  // next (an EOG token: when can_end()), 0 otherwise. Exact: a token is allowed iff
  // accept_bytes(its bytes) would succeed (a trailing partial UTF-8 character counts
  // when some completion of it is accepted).
  void allowed_tokens(const TokenVocab& vocab, std::vector<uint8_t>& mask);
  // Whether one token is allowed (same rule as allowed_tokens, for one id).
  bool token_allowed(const TokenVocab& vocab, int32_t id);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace hearth::grammar
