// Streaming detokenization: hold back only a trailing UTF-8 sequence that is still
// incomplete; everything else (complete characters and provably invalid bytes) is
// released immediately, so the concatenated output equals the concatenated pieces.
#include <cstdint>

#include "hearth/engine/tokenizer.h"

namespace hearth {
namespace {

// Expected length of a sequence starting with `lead`, or 0 if `lead` can never
// start a valid sequence (continuation bytes, 0xC0, 0xC1, 0xF5..0xFF).
size_t sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// Whether `b` may follow `lead` as the second byte (rules out overlong forms,
// surrogates and codepoints above U+10FFFF).
bool valid_second(uint8_t lead, uint8_t b) {
  if ((b & 0xC0) != 0x80) return false;
  switch (lead) {
    case 0xE0:
      return b >= 0xA0;
    case 0xED:
      return b <= 0x9F;
    case 0xF0:
      return b >= 0x90;
    case 0xF4:
      return b <= 0x8F;
    default:
      return true;
  }
}

// Length of the longest prefix of `s` that can be released now: everything except
// a final sequence that is valid so far but not yet complete.
size_t releasable_prefix(const std::string& s) {
  size_t pos = 0;
  while (pos < s.size()) {
    const uint8_t lead = static_cast<uint8_t>(s[pos]);
    const size_t need = sequence_length(lead);
    if (need <= 1) {  // ASCII, or a byte that is invalid on its own: release it
      ++pos;
      continue;
    }
    size_t have = 1;
    bool broken = false;
    while (have < need && pos + have < s.size()) {
      const uint8_t b = static_cast<uint8_t>(s[pos + have]);
      const bool ok = have == 1 ? valid_second(lead, b) : (b & 0xC0) == 0x80;
      if (!ok) {
        broken = true;
        break;
      }
      ++have;
    }
    if (broken) {
      pos += have;  // the bytes read so far can never complete: release them as-is
      continue;
    }
    if (have < need) return pos;  // incomplete tail: hold it back
    pos += need;
  }
  return pos;
}

}  // namespace

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool render_special)
    : tokenizer_(&tokenizer), render_special_(render_special) {}

Result<std::string> StreamDecoder::push(int32_t id) {
  if (!tokenizer_->is_valid(id)) {
    return OutOfRange("stream decoder: token " + std::to_string(id) +
                      " is outside the vocabulary of " + std::to_string(tokenizer_->n_vocab()) +
                      " tokens");
  }
  pending_ += tokenizer_->token_to_piece(id, render_special_);
  const size_t n = releasable_prefix(pending_);
  std::string out = pending_.substr(0, n);
  pending_.erase(0, n);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace hearth
