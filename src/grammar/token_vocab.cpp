// The vocabulary trie: every token's bytes inserted once, so the mask walk visits a
// shared prefix once for all the tokens that start with it.
#include <algorithm>

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
  // Insert the tokens in byte order: each shares a path prefix with the previous one,
  // and children arrive in byte order, so siblings link up as they come.
  std::vector<int32_t> order;
  for (size_t id = 0; id < token_bytes.size(); ++id) {
    if (!token_bytes[id].empty()) order.push_back(static_cast<int32_t>(id));
  }
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return token_bytes[static_cast<size_t>(a)] < token_bytes[static_cast<size_t>(b)];
  });
  std::vector<Node>& nodes = v->nodes_;
  nodes.assign(1, Node{});
  std::vector<uint32_t> last_child(1, 0);
  std::vector<uint32_t> path = {0};  // path[d]: the node for the first d bytes
  std::vector<std::vector<int32_t>> ends(1);
  const std::string* prev = nullptr;
  for (int32_t id : order) {
    const std::string& b = token_bytes[static_cast<size_t>(id)];
    v->max_bytes_ = std::max(v->max_bytes_, static_cast<int32_t>(b.size()));
    size_t common = 0;
    if (prev) {
      while (common < b.size() && common < prev->size() && b[common] == (*prev)[common]) ++common;
    }
    path.resize(common + 1);
    for (size_t d = common; d < b.size(); ++d) {
      const uint32_t parent = path[d];
      const uint32_t child = static_cast<uint32_t>(nodes.size());
      Node n;
      n.byte = static_cast<uint8_t>(b[d]);
      nodes.push_back(n);
      last_child.push_back(0);
      ends.emplace_back();
      if (last_child[parent] == 0) {
        nodes[parent].first_child = child;
      } else {
        nodes[last_child[parent]].next_sibling = child;
      }
      last_child[parent] = child;
      path.push_back(child);
    }
    ends[path[b.size()]].push_back(id);
    prev = &b;
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    nodes[n].tokens_begin = static_cast<uint32_t>(v->token_ids_.size());
    v->token_ids_.insert(v->token_ids_.end(), ends[n].begin(), ends[n].end());
    nodes[n].tokens_end = static_cast<uint32_t>(v->token_ids_.size());
  }
  v->bytes_ = std::move(token_bytes);
  v->eog_ = std::move(eog);
  return v;
}

bool TokenVocab::is_eog(int32_t id) const {
  return std::binary_search(eog_.begin(), eog_.end(), id);
}

}  // namespace hearth::grammar
