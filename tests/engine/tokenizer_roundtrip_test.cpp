// Properties over the real vocabularies: byte-level BPE is lossless for valid UTF-8
// (decode(encode(s)) == s), and no input, however malformed, makes encode fail or
// produce an out-of-range id.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "tokenizer_random_text.h"
#include "tokenizer_test_util.h"

namespace hearth {
namespace {

using testing::file_exists;
using testing::shared_path;

const Tokenizer* load_cached(const std::string& name) {
  static std::map<std::string, std::optional<Tokenizer>> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    const std::string path = shared_path("models/vocab/ggml-vocab-" + name + ".gguf");
    std::optional<Tokenizer> tok;
    if (file_exists(path)) {
      auto r = testing::tokenizer_from_gguf(path);
      if (r.ok()) tok.emplace(std::move(r).value());
    }
    it = cache.emplace(name, std::move(tok)).first;
  }
  return it->second ? &*it->second : nullptr;
}

class BpeRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(BpeRoundTrip, ValidUtf8IsLossless) {
  const Tokenizer* tok = load_cached(GetParam());
  if (tok == nullptr) GTEST_SKIP() << "SKIPPED: vocabulary " << GetParam() << " not present";
  std::mt19937 rng(77);
  for (int i = 0; i < 300; ++i) {
    const std::string text = testing::random_text(rng);
    auto ids = tok->encode(text, false, false);
    ASSERT_TRUE(ids.ok());
    auto back = tok->decode(*ids);
    ASSERT_TRUE(back.ok());
    ASSERT_EQ(*back, text) << "case " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, BpeRoundTrip,
                         ::testing::Values("gpt-2", "deepseek-coder", "deepseek-llm", "falcon",
                                           "mpt", "refact", "starcoder"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

class ArbitraryBytes : public ::testing::TestWithParam<const char*> {};

TEST_P(ArbitraryBytes, EncodeNeverFails) {
  const Tokenizer* tok = load_cached(GetParam());
  if (tok == nullptr) GTEST_SKIP() << "SKIPPED: vocabulary " << GetParam() << " not present";
  std::mt19937 rng(99);
  for (int i = 0; i < 300; ++i) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() & 0xFF);
    for (bool parse_special : {false, true}) {
      auto ids = tok->encode(bytes, true, parse_special);
      ASSERT_TRUE(ids.ok());
      for (int32_t id : *ids) ASSERT_TRUE(tok->is_valid(id)) << id;
      ASSERT_TRUE(tok->decode(*ids).ok());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, ArbitraryBytes,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "deepseek-llm", "falcon"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

// SPM keeps invalid bytes through byte fallback, so even arbitrary bytes round-trip.
TEST(SpmRoundTrip, ArbitraryBytesRoundTrip) {
  const Tokenizer* tok = load_cached("llama-spm");
  if (tok == nullptr) GTEST_SKIP() << "SKIPPED: vocabulary llama-spm not present";
  std::mt19937 rng(5);
  for (int i = 0; i < 300; ++i) {
    std::string bytes(1 + rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() & 0xFF);
    auto ids = tok->encode(bytes, false, false);
    ASSERT_TRUE(ids.ok());
    auto back = tok->decode(*ids);
    ASSERT_TRUE(back.ok());
    ASSERT_EQ(*back, bytes) << "case " << i;
  }
}

bool is_valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    const size_t n = b < 0x80                   ? 1
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

// Streaming real token sequences (emoji and rare CJK arrive as byte tokens in SPM,
// as partial byte-level characters in BPE): every chunk is whole UTF-8 and the
// chunks add up to the full text.
class StreamRealVocab : public ::testing::TestWithParam<const char*> {};

TEST_P(StreamRealVocab, ChunksAreWholeCharacters) {
  const Tokenizer* tok = load_cached(GetParam());
  if (tok == nullptr) GTEST_SKIP() << "SKIPPED: vocabulary " << GetParam() << " not present";
  std::mt19937 rng(4242);
  int split_chars = 0;
  for (int i = 0; i < 300; ++i) {
    const std::string text = testing::random_text(rng);
    auto ids = tok->encode(text, false, false);
    ASSERT_TRUE(ids.ok());
    StreamDecoder stream(*tok);
    std::string joined;
    for (int32_t id : *ids) {
      auto chunk = stream.push(id);
      ASSERT_TRUE(chunk.ok());
      ASSERT_TRUE(is_valid_utf8(*chunk)) << "case " << i;
      if (stream.pending_bytes() > 0) ++split_chars;
      joined += *chunk;
    }
    joined += stream.flush();
    std::string pieces;
    for (int32_t id : *ids) pieces += tok->token_to_piece(id);
    ASSERT_EQ(joined, pieces) << "case " << i;
  }
  EXPECT_GT(split_chars, 0);  // the data did exercise held-back sequences
}

INSTANTIATE_TEST_SUITE_P(Vocabs, StreamRealVocab, ::testing::Values("llama-spm", "gpt-2"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace hearth
