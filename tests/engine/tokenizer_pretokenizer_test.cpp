// The hand-written pre-tokenizer matchers against splits worked out from the
// regexes llama.cpp uses for each tokenizer.ggml.pre value.
#include <gtest/gtest.h>

#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/unicode.h"

namespace hearth::tokenizer {
namespace {

std::vector<std::string> split(PreTokenizer kind, const std::string& text) {
  const std::vector<uint32_t> cps = utf8_to_codepoints(text);
  std::vector<std::string> words;
  size_t start = 0;
  for (size_t len : pre_tokenize(kind, cps)) {
    std::string w;
    for (size_t i = start; i < start + len; ++i) append_utf8(w, cps[i]);
    words.push_back(w);
    start += len;
  }
  EXPECT_EQ(start, cps.size());
  return words;
}

using Words = std::vector<std::string>;

TEST(PreTokenizer, Gpt2) {
  EXPECT_EQ(split(PreTokenizer::kGpt2, "Hello world"), (Words{"Hello", " world"}));
  EXPECT_EQ(split(PreTokenizer::kGpt2, "I'm here"), (Words{"I", "'m", " here"}));
  EXPECT_EQ(split(PreTokenizer::kGpt2, "I'M"), (Words{"I", "'", "M"}));  // no (?i) in gpt-2
  EXPECT_EQ(split(PreTokenizer::kGpt2, "a   b"), (Words{"a", "  ", " b"}));
  EXPECT_EQ(split(PreTokenizer::kGpt2, "a \n"), (Words{"a", " \n"}));
  EXPECT_EQ(split(PreTokenizer::kGpt2, "12345 !!"), (Words{"12345", " !!"}));
  EXPECT_EQ(split(PreTokenizer::kGpt2, "\n\nx"), (Words{"\n", "\n", "x"}));
  EXPECT_EQ(split(PreTokenizer::kGpt2, ""), Words{});
}

TEST(PreTokenizer, Llama3AndQwen2) {
  EXPECT_EQ(split(PreTokenizer::kLlama3, "12345"), (Words{"123", "45"}));
  EXPECT_EQ(split(PreTokenizer::kQwen2, "123"), (Words{"1", "2", "3"}));
  EXPECT_EQ(split(PreTokenizer::kLlama3, "I'M ok"), (Words{"I", "'M", " ok"}));
  EXPECT_EQ(split(PreTokenizer::kLlama3, "(hello"), (Words{"(hello"}));
  EXPECT_EQ(split(PreTokenizer::kLlama3, "x  \n\n y"), (Words{"x", "  \n\n", " y"}));
  EXPECT_EQ(split(PreTokenizer::kLlama3, "a ...\n\nb"), (Words{"a", " ...\n\n", "b"}));
  EXPECT_EQ(split(PreTokenizer::kLlama3, "нещо на"), (Words{"нещо", " на"}));
}

TEST(PreTokenizer, DigitSplittingVariants) {
  EXPECT_EQ(split(PreTokenizer::kStarcoder, "ab 123"), (Words{"ab", " ", "1", "2", "3"}));
  EXPECT_EQ(split(PreTokenizer::kFalcon, "1234567"), (Words{"123", "456", "7"}));
  EXPECT_EQ(split(PreTokenizer::kFalcon, "a,b"), (Words{"a", ",", "b"}));
  EXPECT_EQ(split(PreTokenizer::kDefault, "x+=1"), (Words{"x", "+=", "1"}));
}

TEST(PreTokenizer, Deepseek) {
  EXPECT_EQ(split(PreTokenizer::kDeepseekLlm, "Hello, world\n"),
            (Words{"Hello", ",", " world", "\n"}));
  EXPECT_EQ(split(PreTokenizer::kDeepseekLlm, "我想在apple"), (Words{"我想在", "apple"}));
  // '=' is a symbol (Sm), not punctuation: it stays in the unmatched gap.
  EXPECT_EQ(split(PreTokenizer::kDeepseekCoder, "x = 12"), (Words{"x", " = ", "1", "2"}));
  EXPECT_EQ(split(PreTokenizer::kDeepseekCoder, "x, 12"), (Words{"x", ",", " ", "1", "2"}));
}

// A long whitespace run that is not at the end of its fragment must not cost
// quadratic time in the \s+$ matcher (this would take minutes if it did).
TEST(PreTokenizer, LongWhitespaceRunsStayLinear) {
  const std::string spaces(200000, ' ');
  EXPECT_EQ(split(PreTokenizer::kDeepseekLlm, spaces + "1"), (Words{spaces, "1"}));
  EXPECT_EQ(split(PreTokenizer::kDeepseekLlm, "1" + spaces), (Words{"1", spaces}));
  const std::string digits(300000, '7');
  EXPECT_EQ(split(PreTokenizer::kLlama3, digits).size(), 100000u);
  EXPECT_EQ(split(PreTokenizer::kQwen2, digits).size(), 300000u);
  const auto gpt2 = split(PreTokenizer::kGpt2, spaces + "x");
  ASSERT_EQ(gpt2.size(), 2u);
  EXPECT_EQ(gpt2[1], " x");
}

TEST(PreTokenizer, NamesMapToKinds) {
  EXPECT_EQ(*pre_tokenizer_from_name("llama-bpe"), PreTokenizer::kLlama3);
  EXPECT_EQ(*pre_tokenizer_from_name("refact"), PreTokenizer::kStarcoder);
  EXPECT_EQ(*pre_tokenizer_from_name("mpt"), PreTokenizer::kGpt2);
  EXPECT_EQ(*pre_tokenizer_from_name("qwen2"), PreTokenizer::kQwen2);
  auto bad = pre_tokenizer_from_name("nonsense");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kUnsupported);
}

TEST(Unicode, CategoriesAndByteLevel) {
  EXPECT_TRUE(is_letter('a'));
  EXPECT_TRUE(is_letter(0x0416));   // Ж
  EXPECT_FALSE(is_letter(0x17B6));  // Khmer vowel sign (a mark)
  EXPECT_TRUE(is_number(0x0663));   // Arabic-Indic three
  EXPECT_TRUE(is_punctuation(0x3001));
  EXPECT_TRUE(is_whitespace(0x3000));
  EXPECT_FALSE(is_whitespace(0x200B));  // zero-width space is not White_Space
  for (int b = 0; b < 256; ++b) {
    const std::string& s = byte_to_unicode(static_cast<uint8_t>(b));
    size_t pos = 0;
    EXPECT_EQ(unicode_to_byte(decode_utf8(s, pos)), b);
  }
  EXPECT_EQ(byte_to_unicode(' '), "Ġ");
  EXPECT_EQ(unicode_to_byte(0x4E00), -1);
  size_t pos = 0;
  EXPECT_EQ(decode_utf8("\xE2\x82", pos), kReplacementChar);
  EXPECT_EQ(pos, 1u);
}

}  // namespace
}  // namespace hearth::tokenizer
