// See gen_model_vocab.h.
#include "cli/gen_model_vocab.h"

#include <cstdio>

namespace hearth::cli {
namespace {

constexpr const char* kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's word marker

class Builder {
 public:
  explicit Builder(size_t n) : n_(n) {}
  bool full() const { return v_.tokens.size() >= n_; }
  void add(std::string piece, int32_t type, float score) {
    if (full()) return;
    v_.tokens.push_back(std::move(piece));
    v_.token_types.push_back(type);
    v_.scores.push_back(score);
  }
  // Normal pieces score by rank: earlier pieces are preferred when merging.
  void add_normal(std::string piece) {
    add(std::move(piece), 1, -static_cast<float>(v_.tokens.size()));
  }
  BuiltinVocab take() { return std::move(v_); }

 private:
  size_t n_;
  BuiltinVocab v_;
};

}  // namespace

BuiltinVocab builtin_vocab(size_t n) {
  Builder b(n);
  b.add("<unk>", 2, 0.0f);
  b.add("<s>", 3, 0.0f);
  b.add("</s>", 3, 0.0f);
  for (int i = 0; i < 256; ++i) {
    char piece[8];
    std::snprintf(piece, sizeof(piece), "<0x%02X>", i);
    b.add(piece, 6, 0.0f);
  }
  b.add_normal(kSpace);
  for (char ch = 0x21; ch < 0x7f; ++ch) b.add_normal(std::string(1, ch));
  const std::string alnum =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  for (char ch : alnum) b.add_normal(std::string(kSpace) + ch);
  const std::string lower = "etaoinshrdlcumwfgypbvkjxqz";  // by English letter frequency
  // n-grams of growing length, each also with the word marker in front.
  std::vector<std::string> grams(lower.size());
  for (size_t i = 0; i < lower.size(); ++i) grams[i] = std::string(1, lower[i]);
  while (!b.full()) {
    std::vector<std::string> next;
    next.reserve(grams.size() * lower.size());
    for (const auto& g : grams) {
      for (char ch : lower) next.push_back(g + ch);
    }
    for (const auto& g : next) b.add_normal(g);
    for (const auto& g : next) b.add_normal(std::string(kSpace) + g);
    grams = std::move(next);
    if (grams.size() > 10'000'000) break;  // unreachable for sane sizes
  }
  return b.take();
}

}  // namespace hearth::cli
