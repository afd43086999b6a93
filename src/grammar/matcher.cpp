// The matcher: a set of grammar stacks over code points.
//
// A stack is a chain of nodes in an arena, each node a grammar position (an index into
// GrammarData::elems) and its parent (the position to return to). Nodes are hash-consed,
// so two equal stacks are one node id and a state is a sorted list of top ids: dedup is
// an integer compare, and a state seen before (e.g. inside a JSON string, after every
// token) hits the mask cache. A reference whose next element is the alternative's end
// returns straight to the parent (a tail call), so right recursion (x*) keeps stacks
// shallow. One step expands each (position, return) pair once: nested repetition
// ("a"+++, ((x)*)+) reaches the same pair by exponentially many chains of empty
// alternatives, and the second visit can only add tops the first one added.
#include <algorithm>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "grammar/grammar_data.h"
#include "hearth/grammar/grammar.h"

namespace hearth::grammar {
namespace {

struct Node {
  uint32_t pos;
  int32_t parent;  // -1: the bottom of the stack
};

struct Stacks {
  std::vector<uint32_t> tops;  // node ids whose position is a character class; sorted
  bool accepting = false;      // some path has completed the root rule
  void clear() {
    tops.clear();
    accepting = false;
  }
};

// A UTF-8 character in progress: the bits so far and how many bytes are still due.
struct Partial {
  uint32_t cp = 0;
  uint8_t need = 0;
  uint8_t len = 0;  // the character's byte count
};

// The (position, return) pairs one step has expanded: open addressing, stamped with a
// generation so starting a step is O(1).
class VisitedPairs {
 public:
  void begin() {
    if (++gen_ == 0) {  // the stamp wrapped: forget every entry for real
      std::fill(stamp_.begin(), stamp_.end(), 0);
      gen_ = 1;
    }
    used_ = 0;
  }

  // True the first time `key` is seen since begin().
  bool insert(uint64_t key) {
    if ((used_ + 1) * 2 > stamp_.size()) grow();
    const size_t mask = stamp_.size() - 1;
    for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      if (stamp_[i] != gen_) {
        stamp_[i] = gen_;
        keys_[i] = key;
        ++used_;
        return true;
      }
      if (keys_[i] == key) return false;
    }
  }

 private:
  static size_t hash(uint64_t k) {
    k *= 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(k ^ (k >> 29));
  }

  void grow() {
    std::vector<uint64_t> old_keys;
    std::vector<uint32_t> old_stamp;
    old_keys.swap(keys_);
    old_stamp.swap(stamp_);
    const size_t cap = std::max<size_t>(64, old_stamp.size() * 2);
    keys_.assign(cap, 0);
    stamp_.assign(cap, 0);
    used_ = 0;
    for (size_t i = 0; i < old_stamp.size(); ++i) {
      if (old_stamp[i] == gen_) insert(old_keys[i]);
    }
  }

  std::vector<uint64_t> keys_;
  std::vector<uint32_t> stamp_;
  uint32_t gen_ = 1;
  size_t used_ = 0;
};

constexpr size_t kMaxNodes = size_t{1} << 21;  // compact the arena beyond this
constexpr size_t kMaxCachedMasks = 64;

}  // namespace

struct Matcher::State {
  std::shared_ptr<const GrammarData> keep;
  const GrammarData* g = nullptr;
  std::vector<Node> nodes;
  std::unordered_map<uint64_t, uint32_t> interned;
  Stacks cur;
  Partial partial;
  std::unordered_map<std::string, std::vector<uint8_t>> masks;
  std::vector<Stacks> scratch;  // one per trie depth
  Stacks tmp_a, tmp_b;
  VisitedPairs visited;

  static uint64_t pair_key(uint32_t pos, int32_t parent) {
    return (uint64_t{pos} << 32) | static_cast<uint32_t>(parent + 1);
  }

  uint32_t intern(uint32_t pos, int32_t parent) {
    auto [it, fresh] =
        interned.try_emplace(pair_key(pos, parent), static_cast<uint32_t>(nodes.size()));
    if (fresh) nodes.push_back(Node{pos, parent});
    return it->second;
  }

  // Adds the tops reachable from (pos, parent) to `out`; call visited.begin() first
  // for each new `out`.
  void expand(uint32_t pos, int32_t parent, Stacks& out) {
    for (;;) {
      pos = g->same_rest[pos];
      const Element& e = g->elems[pos];
      if (e.type == ElemType::kClass) {
        out.tops.push_back(intern(pos, parent));
        return;
      }
      if (!visited.insert(pair_key(pos, parent))) return;
      if (e.type == ElemType::kEnd) {
        if (parent < 0) {
          out.accepting = true;
          return;
        }
        const Node n = nodes[static_cast<size_t>(parent)];
        pos = n.pos;
        parent = n.parent;
        continue;
      }
      // A reference: push the return position (unless it is the end: a tail call).
      const uint32_t next = pos + 1;
      const int32_t ret = g->elems[next].type == ElemType::kEnd
                              ? parent
                              : static_cast<int32_t>(intern(g->same_rest[next], parent));
      const std::vector<uint32_t>& alts = g->rules[e.arg].alts;
      for (size_t k = 0; k + 1 < alts.size(); ++k) expand(alts[k], ret, out);
      pos = alts.back();
      parent = ret;
    }
  }

  static void normalize(Stacks& s) {
    std::sort(s.tops.begin(), s.tops.end());
    s.tops.erase(std::unique(s.tops.begin(), s.tops.end()), s.tops.end());
  }

  void advance_cp(const Stacks& in, uint32_t cp, Stacks& out) {
    out.clear();
    visited.begin();
    for (uint32_t top : in.tops) {
      const Node n = nodes[top];
      if (g->classes[g->elems[n.pos].arg].matches(cp)) expand(n.pos + 1, n.parent, out);
    }
    normalize(out);
  }

  // Whether some completion of the character in progress matches a stack: the code
  // points its remaining bytes can still make, minus overlong forms and surrogates.
  bool feasible(const Stacks& in, Partial p) const {
    const uint32_t shift = 6u * p.need;
    uint32_t lo = p.cp << shift;
    uint32_t hi = lo | ((uint32_t{1} << shift) - 1);
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    lo = std::max(lo, kMin[p.len]);
    hi = std::min<uint32_t>(hi, 0x10FFFF);
    if (lo < 0xD800 && hi >= 0xD800) hi = std::min<uint32_t>(hi, 0xD7FF);
    if (lo >= 0xD800 && lo <= 0xDFFF) lo = 0xE000;
    if (lo > hi) return false;
    for (uint32_t top : in.tops) {
      if (g->classes[g->elems[nodes[top].pos].arg].intersects(lo, hi)) return true;
    }
    return false;
  }

  // One byte. *next points at `in` (a character still in progress) or at `out`.
  // False when the byte is rejected (including ill-formed UTF-8: overlong forms,
  // surrogates, beyond U+10FFFF).
  bool step(const Stacks& in, Partial p, uint8_t b, Stacks& out, Partial& pout,
            const Stacks*& next) {
    if (in.tops.empty()) return false;
    uint32_t cp;
    if (p.need == 0) {
      if (b < 0x80) {
        cp = b;
      } else {
        if (b >= 0xC2 && b <= 0xDF) {
          pout = {b & 0x1Fu, 1, 2};
        } else if (b >= 0xE0 && b <= 0xEF) {
          pout = {b & 0x0Fu, 2, 3};
        } else if (b >= 0xF0 && b <= 0xF4) {
          pout = {b & 0x07u, 3, 4};
        } else {
          return false;
        }
        next = &in;
        return feasible(in, pout);
      }
    } else {
      if ((b & 0xC0) != 0x80) return false;
      cp = (p.cp << 6) | (b & 0x3Fu);
      if (p.need > 1) {
        pout = {cp, static_cast<uint8_t>(p.need - 1), p.len};
        next = &in;
        return feasible(in, pout);
      }
      static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
      if (cp < kMin[p.len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    }
    pout = {};
    advance_cp(in, cp, out);
    next = &out;
    return !out.tops.empty() || out.accepting;
  }

  // Feeds bytes from (cur, partial) into tmp; false on rejection.
  bool run(std::string_view bytes, Stacks& result, Partial& pres) {
    const Stacks* at = &cur;
    Partial p = partial;
    Stacks* bufs[2] = {&tmp_a, &tmp_b};
    int flip = 0;
    for (char ch : bytes) {
      Stacks& out = *bufs[flip];
      Partial pout;
      const Stacks* next = nullptr;
      if (!step(*at, p, static_cast<uint8_t>(ch), out, pout, next)) return false;
      if (next == &out) flip ^= 1;
      at = next;
      p = pout;
    }
    if (at != &result) result = *at;
    pres = p;
    return true;
  }

  void walk(const TokenVocab& vocab, uint32_t node, const Stacks& in, Partial p, size_t depth,
            std::vector<uint8_t>& mask) {
    const auto& tn = vocab.nodes();
    const auto& ids = vocab.token_ids();
    for (uint32_t c = tn[node].first_child; c != 0; c = tn[c].next_sibling) {
      Stacks& out = scratch[depth];
      Partial pout;
      const Stacks* next = nullptr;
      if (!step(in, p, tn[c].byte, out, pout, next)) continue;
      for (uint32_t k = tn[c].tokens_begin; k < tn[c].tokens_end; ++k) mask[ids[k]] = 1;
      if (tn[c].first_child != 0 && !next->tops.empty()) {
        if (next == &out) {
          // The deeper levels reuse scratch[depth + 1...]; `out` stays put meanwhile.
          walk(vocab, c, out, pout, depth + 1, mask);
        } else {
          walk(vocab, c, *next, pout, depth + 1, mask);
        }
      }
    }
  }

  std::string cache_key() const {
    std::string key(cur.tops.size() * 4 + 6, '\0');
    // No stack left (the grammar is finished or dead): tops.data() may be null, which
    // memcpy must not receive even for 0 bytes.
    if (!cur.tops.empty()) std::memcpy(key.data(), cur.tops.data(), cur.tops.size() * 4);
    std::memcpy(key.data() + cur.tops.size() * 4, &partial.cp, 4);
    key[key.size() - 2] = static_cast<char>(partial.need | (partial.len << 4));
    key[key.size() - 1] = cur.accepting ? 1 : 0;
    return key;
  }

  // Rebuilds the arena with only the nodes the current stacks use.
  void compact() {
    std::vector<Node> old = std::move(nodes);
    nodes.clear();
    interned.clear();
    masks.clear();
    std::unordered_map<uint32_t, int32_t> moved;
    std::function<int32_t(int32_t)> copy = [&](int32_t id) -> int32_t {
      if (id < 0) return -1;
      auto it = moved.find(static_cast<uint32_t>(id));
      if (it != moved.end()) return it->second;
      const Node n = old[static_cast<size_t>(id)];
      const int32_t parent = copy(n.parent);
      const int32_t fresh = static_cast<int32_t>(intern(n.pos, parent));
      moved.emplace(static_cast<uint32_t>(id), fresh);
      return fresh;
    };
    for (uint32_t& top : cur.tops) top = static_cast<uint32_t>(copy(static_cast<int32_t>(top)));
    normalize(cur);
  }
};

Matcher::Matcher(const Grammar& grammar) : s_(std::make_unique<State>()) {
  s_->keep = grammar.shared();
  s_->g = s_->keep.get();
  const Rule& root = s_->g->rules[s_->g->root];
  s_->visited.begin();
  for (uint32_t alt : root.alts) s_->expand(alt, -1, s_->cur);
  State::normalize(s_->cur);
}

Matcher::~Matcher() = default;
Matcher::Matcher(Matcher&&) noexcept = default;
Matcher& Matcher::operator=(Matcher&&) noexcept = default;

bool Matcher::accept_bytes(std::string_view bytes) {
  Stacks result;
  Partial p;
  if (!s_->run(bytes, result, p)) return false;
  s_->cur = std::move(result);
  s_->partial = p;
  if (s_->nodes.size() > kMaxNodes) s_->compact();
  return true;
}

bool Matcher::can_end() const {
  return s_->cur.accepting && s_->partial.need == 0;
}

bool Matcher::must_end() const {
  return s_->cur.tops.empty();
}

void Matcher::allowed_tokens(const TokenVocab& vocab, std::vector<uint8_t>& mask) {
  std::string key = s_->cache_key();
  auto hit = s_->masks.find(key);
  if (hit != s_->masks.end() && hit->second.size() == static_cast<size_t>(vocab.size())) {
    mask = hit->second;
    return;
  }
  mask.assign(static_cast<size_t>(vocab.size()), 0);
  if (can_end()) {
    for (int32_t id : vocab.eog()) {
      if (id >= 0 && id < vocab.size()) mask[static_cast<size_t>(id)] = 1;
    }
  }
  if (s_->scratch.size() < static_cast<size_t>(vocab.max_bytes()) + 1)
    s_->scratch.resize(static_cast<size_t>(vocab.max_bytes()) + 1);  // never resized mid-walk
  if (!s_->cur.tops.empty()) s_->walk(vocab, 0, s_->cur, s_->partial, 0, mask);
  if (s_->masks.size() >= kMaxCachedMasks) s_->masks.clear();
  s_->masks.emplace(std::move(key), mask);
}

bool Matcher::token_allowed(const TokenVocab& vocab, int32_t id) {
  if (id < 0 || id >= vocab.size()) return false;
  if (vocab.is_eog(id)) return can_end();
  const std::string& b = vocab.bytes(id);
  if (b.empty()) return false;
  Stacks result;
  Partial p;
  return s_->run(b, result, p);
}

}  // namespace hearth::grammar
