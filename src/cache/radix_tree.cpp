#include "cache/radix_tree.h"

#include <algorithm>

namespace hearth::cache {

struct Edge {
  std::shared_ptr<const std::vector<Token>> buf;
  uint32_t off = 0;
  uint32_t len = 0;
  Token at(size_t i) const { return (*buf)[off + i]; }
  Token first() const { return (*buf)[off]; }
};

struct RadixNode {
  Edge edge;  // label from the parent (empty for the root)
  std::vector<std::shared_ptr<const RadixNode>> children;  // sorted by edge.first()
  bool terminal = false;  // a row ends exactly here
  CacheKey terminal_key{};
  // Shortest row in this subtree (ties: smallest key).
  bool has_rep = false;
  uint32_t rep_len = 0;
  CacheKey rep_key{};
  size_t rows = 0;
};

namespace {

using NodePtr = std::shared_ptr<RadixNode>;

bool rep_less(uint32_t la, const CacheKey& ka, uint32_t lb, const CacheKey& kb) {
  return la != lb ? la < lb : ka < kb;
}

// depth = number of tokens from the root to the end of this node's edge.
void recompute(RadixNode& n, uint32_t depth) {
  n.has_rep = false;
  n.rows = 0;
  if (n.terminal) {
    n.has_rep = true;
    n.rep_len = depth;
    n.rep_key = n.terminal_key;
    n.rows = 1;
  }
  for (const auto& c : n.children) {
    n.rows += c->rows;
    if (!c->has_rep) continue;
    if (!n.has_rep || rep_less(c->rep_len, c->rep_key, n.rep_len, n.rep_key)) {
      n.has_rep = true;
      n.rep_len = c->rep_len;
      n.rep_key = c->rep_key;
    }
  }
}

size_t child_index(const RadixNode& n, Token t, bool* found) {
  auto it = std::lower_bound(
      n.children.begin(), n.children.end(), t,
      [](const std::shared_ptr<const RadixNode>& c, Token v) { return c->edge.first() < v; });
  *found = it != n.children.end() && (*it)->edge.first() == t;
  return static_cast<size_t>(it - n.children.begin());
}

NodePtr insert_at(const RadixNode* node, const std::shared_ptr<const std::vector<Token>>& toks,
                  size_t pos, const CacheKey& key) {
  NodePtr n = node ? std::make_shared<RadixNode>(*node) : std::make_shared<RadixNode>();
  const auto& t = *toks;
  if (pos == t.size()) {
    n->terminal = true;
    n->terminal_key = key;
    recompute(*n, static_cast<uint32_t>(pos));
    return n;
  }
  bool found = false;
  size_t i = child_index(*n, t[pos], &found);
  if (!found) {
    auto leaf = std::make_shared<RadixNode>();
    leaf->edge = Edge{toks, static_cast<uint32_t>(pos), static_cast<uint32_t>(t.size() - pos)};
    leaf->terminal = true;
    leaf->terminal_key = key;
    recompute(*leaf, static_cast<uint32_t>(t.size()));
    n->children.insert(n->children.begin() + static_cast<ptrdiff_t>(i), std::move(leaf));
  } else {
    const RadixNode& c = *n->children[i];
    size_t m = 0;
    size_t limit = std::min<size_t>(c.edge.len, t.size() - pos);
    while (m < limit && c.edge.at(m) == t[pos + m]) ++m;
    if (m == c.edge.len) {
      n->children[i] = insert_at(&c, toks, pos + m, key);
    } else {
      // Split c's edge at m: mid keeps the first m tokens, c's copy the rest.
      auto lower = std::make_shared<RadixNode>(c);
      lower->edge.off += static_cast<uint32_t>(m);
      lower->edge.len -= static_cast<uint32_t>(m);
      RadixNode mid;
      mid.edge = Edge{c.edge.buf, c.edge.off, static_cast<uint32_t>(m)};
      mid.children.push_back(std::move(lower));
      recompute(mid, static_cast<uint32_t>(pos + m));
      n->children[i] = insert_at(&mid, toks, pos + m, key);
    }
  }
  recompute(*n, static_cast<uint32_t>(pos));
  return n;
}

// Returns the replacement for `node` (nullptr = remove it). `changed` reports
// whether the row was found.
std::shared_ptr<const RadixNode> remove_at(const std::shared_ptr<const RadixNode>& node,
                                           std::span<const Token> t, size_t pos,
                                           const CacheKey& key, bool* changed) {
  if (pos == t.size()) {
    if (!node->terminal || node->terminal_key != key) return node;
    *changed = true;
    if (node->children.empty()) return nullptr;
    auto n = std::make_shared<RadixNode>(*node);
    n->terminal = false;
    recompute(*n, static_cast<uint32_t>(pos));
    return n;
  }
  bool found = false;
  size_t i = child_index(*node, t[pos], &found);
  if (!found) return node;
  const auto& c = node->children[i];
  if (t.size() - pos < c->edge.len) return node;
  for (size_t m = 0; m < c->edge.len; ++m) {
    if (c->edge.at(m) != t[pos + m]) return node;
  }
  auto replaced = remove_at(c, t, pos + c->edge.len, key, changed);
  if (!*changed) return node;
  auto n = std::make_shared<RadixNode>(*node);
  if (replaced) {
    n->children[i] = std::move(replaced);
  } else {
    n->children.erase(n->children.begin() + static_cast<ptrdiff_t>(i));
  }
  if (pos > 0 && !n->terminal && n->children.empty()) return nullptr;
  recompute(*n, static_cast<uint32_t>(pos));
  return n;
}

}  // namespace

RadixRoot radix_insert(const RadixRoot& root, std::shared_ptr<const std::vector<Token>> tokens,
                       const CacheKey& key) {
  return insert_at(root.get(), tokens, 0, key);
}

RadixRoot radix_remove(const RadixRoot& root, std::span<const Token> tokens, const CacheKey& key) {
  if (!root) return root;
  bool changed = false;
  auto r = remove_at(root, tokens, 0, key, &changed);
  if (!r || r->rows == 0) return nullptr;
  return r;
}

std::optional<RadixMatch> radix_longest_prefix(const RadixRoot& root,
                                               std::span<const Token> prompt) {
  if (!root) return std::nullopt;
  const RadixNode* node = root.get();
  size_t depth = 0;
  std::optional<RadixMatch> best;
  while (depth < prompt.size()) {
    bool found = false;
    size_t i = child_index(*node, prompt[depth], &found);
    if (!found) break;
    const RadixNode* c = node->children[i].get();
    size_t limit = std::min<size_t>(c->edge.len, prompt.size() - depth);
    size_t m = 1;  // first token matched by child_index
    const Token* e = c->edge.buf->data() + c->edge.off;
    while (m < limit && e[m] == prompt[depth + m]) ++m;
    if (c->has_rep) best = RadixMatch{depth + m, c->rep_key, c->rep_len};
    if (m < c->edge.len) break;
    depth += m;
    node = c;
  }
  return best;
}

size_t radix_row_count(const RadixRoot& root) { return root ? root->rows : 0; }

std::vector<std::pair<uint32_t, CacheKey>> radix_prefix_rows(const RadixRoot& root,
                                                             std::span<const Token> tokens) {
  std::vector<std::pair<uint32_t, CacheKey>> out;
  const RadixNode* node = root.get();
  size_t depth = 0;
  while (node) {
    if (node->terminal && depth > 0)
      out.emplace_back(static_cast<uint32_t>(depth), node->terminal_key);
    if (depth == tokens.size()) break;
    bool found = false;
    size_t i = child_index(*node, tokens[depth], &found);
    if (!found) break;
    const RadixNode* c = node->children[i].get();
    if (tokens.size() - depth < c->edge.len) break;
    for (size_t m = 0; m < c->edge.len; ++m) {
      if (c->edge.at(m) != tokens[depth + m]) return out;
    }
    depth += c->edge.len;
    node = c;
  }
  return out;
}

}  // namespace hearth::cache
