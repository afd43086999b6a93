// Byte-level BPE, following llama.cpp's llm_tokenizer_bpe: pre-tokenize into words,
// map each word's bytes to GPT-2's byte-level characters, then repeatedly merge the
// adjacent pair with the best (lowest) merge rank, ties leftmost.
#include <queue>
#include <string>

#include "engine/tokenizer/tokenizer_impl.h"
#include "engine/tokenizer/unicode.h"

namespace hearth::tokenizer {
namespace {

struct Symbol {
  int prev;
  int next;
  size_t offset;  // into the byte-encoded word
  size_t size;    // bytes; 0 once merged into its left neighbour
};

struct Bigram {
  int left;
  int right;
  int64_t rank;
  size_t size;
};

// Lowest rank first; equal ranks: leftmost first.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

class BpeWord {
 public:
  BpeWord(const Tokenizer::Impl& impl, std::string word) : impl_(impl), word_(std::move(word)) {}

  void run(std::vector<int32_t>& out) {
    if (impl_.ignore_merges) {
      const int32_t id = impl_.lookup(word_);
      if (id >= 0) {
        out.push_back(id);
        return;
      }
    }
    for (size_t offset = 0; offset < word_.size();) {
      const size_t len =
          std::min(utf8_lead_length(static_cast<uint8_t>(word_[offset])), word_.size() - offset);
      const int index = static_cast<int>(symbols_.size());
      offset += len;
      symbols_.push_back({index - 1, offset == word_.size() ? -1 : index + 1, offset - len, len});
    }
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) try_add_bigram(i - 1, i);

    while (!queue_.empty()) {
      const Bigram bigram = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[bigram.left];
      Symbol& right = symbols_[bigram.right];
      if (left.size == 0 || right.size == 0 || left.size + right.size != bigram.size) continue;
      left.size += right.size;
      right.size = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = bigram.left;
      try_add_bigram(left.prev, bigram.left);
      try_add_bigram(bigram.left, left.next);
    }

    if (symbols_.empty()) return;
    for (int i = 0; i != -1; i = symbols_[i].next) emit(symbols_[i], out);
  }

 private:
  std::string_view text_of(const Symbol& s) const {
    return std::string_view(word_).substr(s.offset, s.size);
  }

  int64_t rank(const Symbol& a, const Symbol& b) const {
    if (impl_.merge_rank.empty()) {
      // tiktoken convention: the merged token's id is the pair's priority.
      return impl_.lookup(std::string_view(word_).substr(a.offset, a.size + b.size));
    }
    std::string key;
    key.reserve(a.size + b.size + 1);
    key.append(text_of(a));
    key.push_back(' ');
    key.append(text_of(b));
    auto it = impl_.merge_rank.find(key);
    return it == impl_.merge_rank.end() ? -1 : it->second;
  }

  void try_add_bigram(int left, int right) {
    if (left == -1 || right == -1) return;
    const int64_t r = rank(symbols_[left], symbols_[right]);
    if (r < 0) return;
    queue_.push({left, right, r, symbols_[left].size + symbols_[right].size});
  }

  // A final symbol that is not a token (inconsistent merges, or a character missing
  // from the vocabulary) is emitted character by character, then as unk.
  void emit(const Symbol& s, std::vector<int32_t>& out) const {
    const std::string_view text = text_of(s);
    const int32_t id = impl_.lookup(text);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    for (size_t pos = 0; pos < text.size();) {
      const size_t len =
          std::min(utf8_lead_length(static_cast<uint8_t>(text[pos])), text.size() - pos);
      const int32_t char_id = impl_.lookup(text.substr(pos, len));
      if (char_id >= 0) {
        out.push_back(char_id);
      } else if (impl_.vocab.unk_id >= 0) {
        out.push_back(impl_.vocab.unk_id);
      }
      pos += len;
    }
  }

  const Tokenizer::Impl& impl_;
  std::string word_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
};

}  // namespace

void bpe_tokenize(const Tokenizer::Impl& impl, std::string_view text, std::vector<int32_t>& out) {
  const std::vector<uint32_t> cps = utf8_to_codepoints(text);
  const std::vector<size_t> words = pre_tokenize(impl.pre, cps);
  size_t start = 0;
  std::string utf8;
  for (size_t len : words) {
    utf8.clear();
    for (size_t i = start; i < start + len; ++i) append_utf8(utf8, cps[i]);
    start += len;
    std::string encoded;
    encoded.reserve(utf8.size() * 2);
    for (char c : utf8) encoded += byte_to_unicode(static_cast<uint8_t>(c));
    BpeWord(impl, std::move(encoded)).run(out);
  }
}

}  // namespace hearth::tokenizer
