// The ggml type table: block geometry for every known id, nullptr for the rest.
#include <gtest/gtest.h>

#include "hearth/gguf/gguf.h"

namespace hearth::gguf {
namespace {

struct Row {
  uint32_t id;
  const char* name;
  uint32_t block, bytes;
};

// Sizes from ggml's block structs (QK_K = 256).
const Row kRows[] = {
    {0, "f32", 1, 4},         {1, "f16", 1, 2},         {2, "q4_0", 32, 18},
    {3, "q4_1", 32, 20},      {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},
    {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},      {10, "q2_K", 256, 84},
    {11, "q3_K", 256, 110},   {12, "q4_K", 256, 144},   {13, "q5_K", 256, 176},
    {14, "q6_K", 256, 210},   {15, "q8_K", 256, 292},   {16, "iq2_xxs", 256, 66},
    {17, "iq2_xs", 256, 74},  {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50},
    {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},  {22, "iq2_s", 256, 82},
    {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},         {25, "i16", 1, 2},
    {26, "i32", 1, 4},        {27, "i64", 1, 8},        {28, "f64", 1, 8},
    {29, "iq1_m", 256, 56},   {30, "bf16", 1, 2},       {34, "tq1_0", 256, 54},
    {35, "tq2_0", 256, 66},
};

TEST(TypeTraits, KnownIds) {
  for (const Row& r : kRows) {
    const TypeTraits* t = type_traits(r.id);
    ASSERT_NE(t, nullptr) << r.id;
    EXPECT_STREQ(t->name, r.name);
    EXPECT_EQ(t->block_size, r.block) << r.name;
    EXPECT_EQ(t->type_size, r.bytes) << r.name;
    EXPECT_EQ(t->quantized, r.block > 1) << r.name;
    EXPECT_EQ(type_traits(static_cast<TensorType>(r.id)), t);
    EXPECT_EQ(tensor_type_name(static_cast<TensorType>(r.id)), r.name);
  }
}

TEST(TypeTraits, UnknownIds) {
  for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 39u, 100u, 0xffffffffu}) {
    EXPECT_EQ(type_traits(id), nullptr) << id;
  }
  EXPECT_EQ(tensor_type_name(static_cast<TensorType>(4)), "type#4");
}

TEST(TypeTraits, RowBytes) {
  EXPECT_EQ(row_bytes(TensorType::kF32, 10), 40u);
  EXPECT_EQ(row_bytes(TensorType::kQ4_K, 512), 288u);
  EXPECT_EQ(row_bytes(TensorType::kQ8_0, 64), 68u);
  EXPECT_EQ(row_bytes(TensorType::kQ8_0, 33), 0u);  // not a whole number of blocks
  EXPECT_EQ(row_bytes(static_cast<TensorType>(5), 32), 0u);
}

TEST(ValueTypes, Names) {
  EXPECT_STREQ(value_type_name(ValueType::kString), "string");
  EXPECT_STREQ(value_type_name(ValueType::kFloat64), "f64");
  EXPECT_STREQ(value_type_name(static_cast<ValueType>(77)), "unknown");
}

TEST(ValueTypes, TypedReads) {
  EXPECT_EQ(*Value::u32(7).as_u64(), 7u);
  EXPECT_EQ(*Value::i32(-3).as_i64(), -3);
  EXPECT_FALSE(Value::i32(-3).as_u64().ok());
  EXPECT_FALSE(Value::u64(~uint64_t{0}).as_i64().ok());
  EXPECT_EQ(*Value::u32(2).as_f64(), 2.0);
  EXPECT_FALSE(Value::str("x").as_f64().ok());
  EXPECT_NE(Value::str("x").as_bool().status().message().find("expected bool, found string"),
            std::string::npos);
  EXPECT_EQ(Value::f32(1.5f).as_array(), nullptr);
  EXPECT_TRUE(Value::u32(1).is_integer());
  EXPECT_TRUE(Value::f32(1).is_float());
  EXPECT_FALSE(Value::u32(1) == Value::u64(1));  // same number, different stored type
  EXPECT_TRUE(Value::string_array({"a"}) == Value::string_array({"a"}));
}

}  // namespace
}  // namespace hearth::gguf
