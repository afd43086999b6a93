// SentencePiece-style BPE, following llama.cpp's llm_tokenizer_spm: start from UTF-8
// characters, repeatedly merge the adjacent pair whose concatenation is the
// highest-scoring vocabulary piece (ties: leftmost), then map each final symbol to a
// token, re-splitting symbols that are not tokens along the merges that built them
// and falling back to byte tokens <0xXX> (or unk) for anything left.
#include <algorithm>
#include <queue>
#include <unordered_map>
#include <utility>

#include "engine/tokenizer/tokenizer_impl.h"
#include "engine/tokenizer/unicode.h"

namespace hearth::tokenizer {
namespace {

struct Symbol {
  int prev;
  int next;
  size_t offset;  // into the text
  size_t size;    // bytes; 0 once merged into its left neighbour
};

struct Bigram {
  int left;
  int right;
  float score;
  size_t size;
};

// Highest score first; equal scores: leftmost first.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class SpmSession {
 public:
  SpmSession(const Tokenizer::Impl& impl, std::string_view text) : impl_(impl), text_(text) {}

  void run(std::vector<int32_t>& out) {
    for (size_t offset = 0; offset < text_.size();) {
      // llama.cpp cuts by lead byte alone; checking the continuation bytes keeps a
      // broken sequence from swallowing the next character (same ids for valid UTF-8).
      const size_t len = utf8_char_length(text_, offset);
      const int index = static_cast<int>(symbols_.size());
      offset += len;
      symbols_.push_back({index - 1, offset == text_.size() ? -1 : index + 1, offset - len, len});
    }
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) try_add_bigram(i - 1, i);

    while (!queue_.empty()) {
      const Bigram bigram = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[bigram.left];
      Symbol& right = symbols_[bigram.right];
      // Stale: one side was merged away or grew since this pair was queued.
      if (left.size == 0 || right.size == 0 || left.size + right.size != bigram.size) continue;
      left.size += right.size;
      right.size = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = bigram.left;
      try_add_bigram(left.prev, bigram.left);
      try_add_bigram(bigram.left, left.next);
    }

    if (symbols_.empty()) return;
    for (int i = 0; i != -1; i = symbols_[i].next) resegment(symbols_[i], out);
  }

 private:
  std::string_view text_of(const Symbol& s) const { return text_.substr(s.offset, s.size); }

  void try_add_bigram(int left, int right) {
    if (left == -1 || right == -1) return;
    const std::string_view joined =
        text_.substr(symbols_[left].offset, symbols_[left].size + symbols_[right].size);
    const int32_t id = impl_.lookup(joined);
    if (id < 0) return;
    queue_.push({left, right, impl_.score(id), joined.size()});
    rev_merge_[std::string(joined)] = {left, right};
  }

  void resegment(const Symbol& symbol, std::vector<int32_t>& out) const {
    const std::string_view text = text_of(symbol);
    const int32_t id = impl_.lookup(text);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    auto it = rev_merge_.find(std::string(text));
    if (it == rev_merge_.end()) {
      for (char c : text) {
        const int32_t byte_id = impl_.byte_token[static_cast<uint8_t>(c)];
        if (byte_id >= 0) {
          out.push_back(byte_id);
        } else if (impl_.vocab.unk_id >= 0) {
          out.push_back(impl_.vocab.unk_id);
        }
      }
      return;
    }
    resegment(symbols_[it->second.first], out);
    resegment(symbols_[it->second.second], out);
  }

  const Tokenizer::Impl& impl_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
  std::unordered_map<std::string, std::pair<int, int>> rev_merge_;
};

}  // namespace

void spm_tokenize(const Tokenizer::Impl& impl, std::string_view text, std::vector<int32_t>& out) {
  SpmSession(impl, text).run(out);
}

}  // namespace hearth::tokenizer
