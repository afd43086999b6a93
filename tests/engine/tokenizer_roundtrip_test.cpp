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
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "deepseek-llm",
                                           "falcon"),
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

}  // namespace
}  // namespace hearth
