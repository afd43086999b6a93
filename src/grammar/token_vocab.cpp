// The vocabulary trie: every token's bytes inserted once, so the mask walk visits a
// shared prefix once for all the tokens that start with it.
#include <algorithm>
#include <map>

#include "hearth/grammar/grammar.h"

namespace hearth::grammar {

std::shared_ptr<const TokenVocab> TokenVocab::build(std::vector<std::string> token_bytes,
                                                    std::vector<int32_t> eog) {
  auto v = std::make_shared<TokenVocab>();
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  // An end-of-generation token is never text, whatever its stored form.
  for (int32_t id : eog) {
    if (id >= 0 && static_cast<size_t>(id) < token_bytes.size()) token_bytes[id].clear();
  }
  // Build with child maps, then flatten to first_child / next_sibling in byte order.
  struct Tmp {
    std::map<uint8_t, uint32_t> children;
    std::vector<int32_t> tokens;
  };
  std::vector<Tmp> tmp(1);
  for (size_t id = 0; id < token_bytes.size(); ++id) {
    const std::string& b = token_bytes[id];
    if (b.empty()) continue;
    v->max_bytes_ = std::max(v->max_bytes_, static_cast<int32_t>(b.size()));
    uint32_t node = 0;
    for (char ch : b) {
      const uint8_t c = static_cast<uint8_t>(ch);
      auto it = tmp[node].children.find(c);
      if (it == tmp[node].children.end()) {
        const uint32_t next = static_cast<uint32_t>(tmp.size());
        tmp[node].children.emplace(c, next);
        tmp.emplace_back();
        node = next;
      } else {
        node = it->second;
      }
    }
    tmp[node].tokens.push_back(static_cast<int32_t>(id));
  }
  v->nodes_.resize(tmp.size());
  for (size_t n = 0; n < tmp.size(); ++n) {
    Node& out = v->nodes_[n];
    out.tokens_begin = static_cast<uint32_t>(v->token_ids_.size());
    v->token_ids_.insert(v->token_ids_.end(), tmp[n].tokens.begin(), tmp[n].tokens.end());
    out.tokens_end = static_cast<uint32_t>(v->token_ids_.size());
    uint32_t prev = 0;
    for (const auto& [byte, child] : tmp[n].children) {
      v->nodes_[child].byte = byte;
      if (prev == 0) {
        out.first_child = child;
      } else {
        v->nodes_[prev].next_sibling = child;
      }
      prev = child;
    }
  }
  v->bytes_ = std::move(token_bytes);
  v->eog_ = std::move(eog);
  return v;
}

bool TokenVocab::is_eog(int32_t id) const {
  return std::binary_search(eog_.begin(), eog_.end(), id);
}

}  // namespace hearth::grammar
