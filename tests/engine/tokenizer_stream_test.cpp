// StreamDecoder: multi-byte characters split across byte tokens come out whole;
// invalid bytes come out as soon as they are provably invalid; nothing is lost.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdio>

#include "hearth/engine/tokenizer.h"

namespace hearth {
namespace {

// <unk> <s> </s> <0x00>..<0xFF> "▁a" "b"
const Tokenizer& byte_tokenizer() {
  static const Tokenizer tok = [] {
    Vocab v;
    v.model = "llama";
    v.tokens = {"<unk>", "<s>", "</s>"};
    v.token_types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl};
    for (int b = 0; b < 256; ++b) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
      v.tokens.push_back(hex);
      v.token_types.push_back(TokenType::kByte);
    }
    v.tokens.push_back("▁a");
    v.token_types.push_back(TokenType::kNormal);
    v.tokens.push_back("b");
    v.token_types.push_back(TokenType::kNormal);
    v.bos_id = 1;
    v.eos_id = 2;
    v.unk_id = 0;
    return std::move(Tokenizer::create(v)).value();
  }();
  return tok;
}

int32_t byte_id(uint8_t b) {
  return 3 + b;
}
constexpr int32_t kSpaceA = 259;
constexpr int32_t kB = 260;

std::string push(StreamDecoder& d, int32_t id) {
  auto r = d.push(id);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : std::string("<error>");
}

TEST(StreamDecoder, HoldsBackSplitEmoji) {
  StreamDecoder d(byte_tokenizer());
  EXPECT_EQ(push(d, kSpaceA), " a");
  EXPECT_EQ(push(d, byte_id(0xF0)), "");
  EXPECT_EQ(push(d, byte_id(0x9F)), "");
  EXPECT_EQ(push(d, byte_id(0x98)), "");
  EXPECT_EQ(d.pending_bytes(), 3u);
  EXPECT_EQ(push(d, byte_id(0x81)), "\xF0\x9F\x98\x81");  // 😁
  EXPECT_EQ(push(d, kB), "b");
  EXPECT_EQ(d.flush(), "");
}

TEST(StreamDecoder, CompletesWhenTheNextPieceFinishesTheCharacter) {
  StreamDecoder d(byte_tokenizer());
  EXPECT_EQ(push(d, byte_id(0xD0)), "");
  EXPECT_EQ(push(d, byte_id(0x96)), "\xD0\x96");  // Ж
}

TEST(StreamDecoder, InvalidBytesAreReleasedOnceProvenInvalid) {
  StreamDecoder d(byte_tokenizer());
  EXPECT_EQ(push(d, byte_id(0xFF)), "\xFF");  // never valid
  EXPECT_EQ(push(d, byte_id(0x80)), "\x80");  // stray continuation
  EXPECT_EQ(push(d, byte_id(0xE2)), "");      // could still become valid
  EXPECT_EQ(push(d, kB),
            "\xE2"
            "b");  // 'b' proves it cannot
  EXPECT_EQ(push(d, byte_id(0xE0)), "");
  EXPECT_EQ(push(d, byte_id(0x80)), "\xE0\x80");  // overlong form: invalid second byte
  EXPECT_EQ(push(d, byte_id(0xF0)), "");
  EXPECT_EQ(d.flush(), "\xF0");  // end of stream releases what is left
  EXPECT_EQ(d.pending_bytes(), 0u);
}

TEST(StreamDecoder, OutOfRangeIsAnErrorAndKeepsState) {
  StreamDecoder d(byte_tokenizer());
  EXPECT_EQ(push(d, byte_id(0xC3)), "");
  auto r = d.push(byte_tokenizer().n_vocab());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kOutOfRange);
  r = d.push(-1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(push(d, byte_id(0xA9)), "\xC3\xA9");  // é
}

TEST(StreamDecoder, ControlTokensRenderOrNot) {
  StreamDecoder shown(byte_tokenizer());
  EXPECT_EQ(push(shown, 2), "</s>");
  StreamDecoder hidden(byte_tokenizer(), /*render_special=*/false);
  EXPECT_EQ(push(hidden, 2), "");
}

bool is_valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    size_t n = b < 0x80                   ? 1
               : (b >= 0xC2 && b <= 0xDF) ? 2
               : (b >= 0xE0 && b <= 0xEF) ? 3
               : (b >= 0xF0 && b <= 0xF4) ? 4
                                          : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<uint8_t>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

// Whatever the token sequence, the pushed chunks plus flush() equal the pieces;
// when the whole text is valid UTF-8, every chunk is valid UTF-8 on its own.
RC_GTEST_PROP(StreamDecoderProperty, LosslessAndCharacterAligned, (const std::string& text)) {
  const Tokenizer& tok = byte_tokenizer();
  StreamDecoder d(tok);
  std::string joined;
  bool chunks_valid = true;
  for (char c : text) {
    auto r = d.push(byte_id(static_cast<uint8_t>(c)));
    RC_ASSERT(r.ok());
    chunks_valid = chunks_valid && is_valid_utf8(*r);
    joined += *r;
  }
  const std::string tail = d.flush();
  joined += tail;
  RC_ASSERT(joined == text);
  if (is_valid_utf8(text)) {
    RC_ASSERT(chunks_valid);
    RC_ASSERT(tail.empty());
  }
}

// Same with real UTF-8 text cut at every byte.
RC_GTEST_PROP(StreamDecoderProperty, ValidTextSplitIntoBytes, ()) {
  const auto cps = *rc::gen::container<std::vector<uint32_t>>(rc::gen::oneOf(
      rc::gen::inRange<uint32_t>(0x20, 0x7F), rc::gen::inRange<uint32_t>(0x80, 0xD7FF),
      rc::gen::inRange<uint32_t>(0xE000, 0x10FFFF)));
  std::string text;
  for (uint32_t cp : cps) {
    if (cp < 0x80) {
      text.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      text.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      text.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      text.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      text.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      text.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      text.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      text.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      text.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      text.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  StreamDecoder d(byte_tokenizer());
  std::string joined;
  for (char c : text) {
    auto r = d.push(byte_id(static_cast<uint8_t>(c)));
    RC_ASSERT(r.ok());
    RC_ASSERT(is_valid_utf8(*r));
    joined += *r;
  }
  RC_ASSERT(d.flush().empty());
  RC_ASSERT(joined == text);
}

}  // namespace
}  // namespace hearth
