// Persistent (path-copying) radix tree over token ids. Every published row of a
// namespace is a path from the root; a lookup walks the prompt once and returns
// the deepest point it reaches, together with the shortest row below that point
// (any row there shares that many leading tokens with the prompt; the shortest
// is the cheapest to restore partially).
//
// Nodes are immutable once built: insert and remove copy only the nodes on the
// path they touch and return a new root, so a reader holding an old root keeps
// a consistent tree with no locking. Edge labels are views into the rows' own
// token vectors (shared_ptr + offset/length), so splitting an edge copies nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "hearth/cache/types.h"

namespace hearth::cache {

struct RadixNode;
using RadixRoot = std::shared_ptr<const RadixNode>;

struct RadixMatch {
  size_t depth = 0;       // tokens of the prompt matched
  CacheKey key{};         // shortest row under the match point
  uint32_t row_len = 0;   // its token count (>= depth)
};

// tokens must stay alive as long as any tree that contains the row (the tree
// keeps a reference).
RadixRoot radix_insert(const RadixRoot& root, std::shared_ptr<const std::vector<Token>> tokens,
                       const CacheKey& key);
RadixRoot radix_remove(const RadixRoot& root, std::span<const Token> tokens, const CacheKey& key);
// nullopt when nothing shares even one token with the prompt.
std::optional<RadixMatch> radix_longest_prefix(const RadixRoot& root, std::span<const Token> prompt);
size_t radix_row_count(const RadixRoot& root);
// Rows whose whole token list is a prefix of `tokens` (shorter than it or equal), as
// (token count, key), shortest first: the candidate parents of a delta row.
std::vector<std::pair<uint32_t, CacheKey>> radix_prefix_rows(const RadixRoot& root,
                                                             std::span<const Token> tokens);

}  // namespace hearth::cache
