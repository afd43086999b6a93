// Tokenizer::encode_with_special_ranges: control-token text becomes the control token
// only where it lies wholly inside a special range; everywhere else it is text, and
// the ranges change nothing but where the input is cut.
#include <gtest/gtest.h>

#include <algorithm>

#include "tokenizer_test_util.h"

namespace hearth {
namespace {

using testing::file_exists;
using testing::shared_path;

class SpecialRanges : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = shared_path("models/stories260K.gguf");
    if (!file_exists(path)) GTEST_SKIP() << "SKIPPED: " << path << " absent";
    auto t = testing::tokenizer_from_gguf(path);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    tok_.emplace(std::move(t).value());
    ASSERT_TRUE(tok_->is_control(kEos));
  }
  std::vector<int32_t> encode(std::string_view text, std::vector<TextRange> ranges) {
    auto ids = tok_->encode_with_special_ranges(text, false, ranges);
    EXPECT_TRUE(ids.ok()) << ids.status().to_string();
    return ids.ok() ? *ids : std::vector<int32_t>{};
  }
  size_t eos_count(const std::vector<int32_t>& ids) {
    return static_cast<size_t>(std::count(ids.begin(), ids.end(), kEos));
  }

  static constexpr int32_t kEos = 2;  // "</s>"
  std::optional<Tokenizer> tok_;
};

TEST_F(SpecialRanges, NoneAndWholeTextAreParseSpecialFalseAndTrue) {
  const std::string text = "Lily</s> said </s>hi";
  EXPECT_EQ(encode(text, {}), *tok_->encode(text, false, false));
  EXPECT_EQ(encode(text, {{0, text.size()}}), *tok_->encode(text, false, true));
  EXPECT_EQ(eos_count(encode(text, {{0, text.size()}})), 2u);
}

TEST_F(SpecialRanges, OnlyOccurrencesInsideARangeBecomeControlTokens) {
  const std::string text = "Lily</s> said </s>hi";  // </s> at 4 and at 14
  const auto first_only = encode(text, {{4, 8}});
  EXPECT_EQ(eos_count(first_only), 1u);
  // The control token stands where the first occurrence was: after "Lily"'s pieces.
  const auto lily = encode("Lily", {});
  ASSERT_LT(lily.size(), first_only.size());
  EXPECT_TRUE(std::equal(lily.begin(), lily.end(), first_only.begin()));
  EXPECT_EQ(first_only[lily.size()], kEos);
  EXPECT_EQ(eos_count(encode(text, {{14, 18}})), 1u);
  // What follows is the rest tokenized as text, the second </s> included.
  const auto rest = encode(" said </s>hi", {});
  EXPECT_EQ(std::vector<int32_t>(first_only.begin() + static_cast<std::ptrdiff_t>(lily.size()) + 1,
                                 first_only.end()),
            rest);
}

TEST_F(SpecialRanges, AnOccurrenceStraddlingARangeEdgeIsText) {
  const std::string text = "a</s>b";
  EXPECT_EQ(eos_count(encode(text, {{0, 3}})), 0u);
  EXPECT_EQ(eos_count(encode(text, {{3, 6}})), 0u);
  // Touching ranges merge, so together they hold the whole occurrence.
  EXPECT_EQ(eos_count(encode(text, {{3, 6}, {1, 3}})), 1u);
}

TEST_F(SpecialRanges, RangesOutsideTheTextAreInvalidArgument) {
  for (TextRange bad : {TextRange{0, 7}, TextRange{4, 2}}) {
    std::vector<TextRange> ranges = {bad};
    auto ids = tok_->encode_with_special_ranges("a</s>b", false, ranges);
    ASSERT_FALSE(ids.ok());
    EXPECT_EQ(ids.status().code(), ErrorCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace hearth
