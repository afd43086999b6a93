// GgufFile's typed getters: NotFound for absent keys, InvalidArgument naming the key
// on a type mismatch or an out-of-range value.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hearth/gguf/gguf.h"

namespace hearth::gguf {
namespace {

using ::testing::HasSubstr;

class Getters : public ::testing::Test {
 protected:
  void SetUp() override {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_u32("u", 7);
    w.set("big", Value::u64(uint64_t{1} << 40));
    w.set("neg", Value::i32(-5));
    w.set_f32("f", 0.5f);
    w.set_bool("b", true);
    w.set("strs", Value::string_array({"x", "y"}));
    w.set("ints", Value::i32_array({1, -2}));
    w.set("floats", Value::f32_array({1.5f}));
    auto bytes = w.serialize();
    ASSERT_TRUE(bytes.ok());
    bytes_ = std::move(bytes).value();
    auto f = GgufFile::parse(bytes_);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    file_ = std::move(f).value();
  }
  std::vector<uint8_t> bytes_;
  GgufFile file_;
};

TEST_F(Getters, Values) {
  EXPECT_EQ(*file_.get_u32("u"), 7u);
  EXPECT_EQ(*file_.get_u64("big"), uint64_t{1} << 40);
  EXPECT_EQ(*file_.get_i64("neg"), -5);
  EXPECT_EQ(*file_.get_f32("f"), 0.5f);
  EXPECT_EQ(*file_.get_f32("u"), 7.0f);  // integers read as floats
  EXPECT_TRUE(*file_.get_bool("b"));
  EXPECT_EQ(*file_.get_string("general.architecture"), "llama");
  EXPECT_EQ(*file_.get_string_array("strs"), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(*file_.get_i32_array("ints"), (std::vector<int32_t>{1, -2}));
  EXPECT_EQ(*file_.get_f32_array("floats"), (std::vector<float>{1.5f}));
  EXPECT_EQ(file_.architecture(), "llama");
}

TEST_F(Getters, Fallbacks) {
  EXPECT_EQ(*file_.get_u64_or("absent", 9), 9u);
  EXPECT_EQ(*file_.get_f32_or("absent", 2.5f), 2.5f);
  EXPECT_FALSE(*file_.get_bool_or("absent", false));
  EXPECT_EQ(*file_.get_u64_or("u", 9), 7u);
  auto wrong = file_.get_u64_or("general.architecture", 1);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), ErrorCode::kInvalidArgument);
}

TEST_F(Getters, Errors) {
  auto missing = file_.get_u32("nope");
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("'nope' not found"));
  auto type = file_.get_string("u");
  EXPECT_EQ(type.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(type.status().message(), HasSubstr("metadata key 'u': expected string, found u32"));
  EXPECT_THAT(file_.get_u32("big").status().message(), HasSubstr("does not fit in u32"));
  EXPECT_THAT(file_.get_u64("neg").status().message(), HasSubstr("non-negative"));
  EXPECT_THAT(file_.get_string_array("ints").status().message(), HasSubstr("'ints' element 0"));
  EXPECT_THAT(file_.get_i32_array("strs").status().message(), HasSubstr("'strs' element 0"));
  EXPECT_THAT(file_.get_f32_array("u").status().message(), HasSubstr("expected an array"));
  EXPECT_EQ(file_.tensor("none"), nullptr);
}

}  // namespace
}  // namespace hearth::gguf
