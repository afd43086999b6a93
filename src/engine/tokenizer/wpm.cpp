// WordPiece ("bert" vocabularies), as llama.cpp's WPM tokenizer: the text is normalized
// (each codepoint to the first of its NFD decomposition, lowercased; controls, NUL and
// U+FFFD dropped), split at whitespace, and every punctuation character, ASCII symbol
// and CJK ideograph becomes a word of its own. Each word, prefixed with "▁" (the GGUF
// converter's spelling of a word start; continuations are stored without "##"), is cut
// greedily into the longest vocabulary tokens from the left; a word with any part that
// matches nothing becomes the unknown token as a whole.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer_impl.h"
#include "engine/tokenizer/unicode.h"

namespace hearth::tokenizer {
namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // "▁" U+2581

bool is_cjk_ideograph(uint32_t cp) {
  // The ranges BERT's BasicTokenizer splits around (the Hugging Face tokenizers'
  // extension B bound, 0x2B920, which llama.cpp keeps as well).
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

std::vector<std::string> wpm_words(std::string_view text) {
  std::vector<std::string> words(1);
  size_t pos = 0;
  while (pos < text.size()) {
    const uint32_t cp = nfd_first(decode_utf8(text, pos));
    if (is_whitespace(cp)) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    if (cp == 0 || cp == kReplacementChar || is_control(cp)) continue;
    const uint32_t low = to_lower(cp);
    if (is_punctuation(cp) || (cp < 0x7F && is_symbol(cp)) || is_cjk_ideograph(cp)) {
      if (!words.back().empty()) words.emplace_back();
      append_utf8(words.back(), low);
      words.emplace_back();
    } else {
      append_utf8(words.back(), low);
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

}  // namespace

void wpm_tokenize(const Tokenizer::Impl& impl, std::string_view text, std::vector<int32_t>& out) {
  std::string word;
  for (const std::string& w : wpm_words(text)) {
    word.assign(kWordStart);
    word += w;
    const size_t n = word.size();
    const size_t start = out.size();
    for (size_t i = 0; i < n;) {
      size_t j = std::min(n, i + impl.max_token_len);
      int32_t id = -1;
      for (; j > i; --j) {
        id = impl.lookup(std::string_view(word).substr(i, j - i));
        if (id >= 0) break;
      }
      if (id < 0) {  // an unmatched part: the whole word is unknown
        out.resize(start);
        break;
      }
      out.push_back(id);
      i = j;
    }
    if (out.size() == start) out.push_back(impl.vocab.unk_id);
  }
}

}  // namespace hearth::tokenizer
