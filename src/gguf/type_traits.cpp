// ggml tensor type table: block size and bytes per block for every type id hearth knows.
#include <array>

#include "hearth/gguf/gguf.h"

namespace hearth::gguf {
namespace {

struct Entry {
  uint32_t id;
  TypeTraits traits;
};

// Sizes follow ggml's block structs (QK_K = 256). Ids 4, 5 (removed Q4_2/Q4_3) and
// 31..33 (removed repacked Q4_0 variants) are deliberately absent: files using them
// are rejected as unknown.
constexpr std::array<Entry, 31> kTable = {{
    {0, {"f32", 1, 4, false}},        {1, {"f16", 1, 2, false}},
    {2, {"q4_0", 32, 18, true}},      {3, {"q4_1", 32, 20, true}},
    {6, {"q5_0", 32, 22, true}},      {7, {"q5_1", 32, 24, true}},
    {8, {"q8_0", 32, 34, true}},      {9, {"q8_1", 32, 36, true}},
    {10, {"q2_K", 256, 84, true}},    {11, {"q3_K", 256, 110, true}},
    {12, {"q4_K", 256, 144, true}},   {13, {"q5_K", 256, 176, true}},
    {14, {"q6_K", 256, 210, true}},   {15, {"q8_K", 256, 292, true}},
    {16, {"iq2_xxs", 256, 66, true}}, {17, {"iq2_xs", 256, 74, true}},
    {18, {"iq3_xxs", 256, 98, true}}, {19, {"iq1_s", 256, 50, true}},
    {20, {"iq4_nl", 32, 18, true}},   {21, {"iq3_s", 256, 110, true}},
    {22, {"iq2_s", 256, 82, true}},   {23, {"iq4_xs", 256, 136, true}},
    {24, {"i8", 1, 1, false}},        {25, {"i16", 1, 2, false}},
    {26, {"i32", 1, 4, false}},       {27, {"i64", 1, 8, false}},
    {28, {"f64", 1, 8, false}},       {29, {"iq1_m", 256, 56, true}},
    {30, {"bf16", 1, 2, false}},      {34, {"tq1_0", 256, 54, true}},
    {35, {"tq2_0", 256, 66, true}},
}};

}  // namespace

const TypeTraits* type_traits(uint32_t raw_type_id) {
  for (const Entry& e : kTable) {
    if (e.id == raw_type_id) return &e.traits;
  }
  return nullptr;
}

const TypeTraits* type_traits(TensorType t) {
  return type_traits(static_cast<uint32_t>(t));
}

std::string tensor_type_name(TensorType t) {
  const TypeTraits* tr = type_traits(t);
  if (tr != nullptr) return tr->name;
  return "type#" + std::to_string(static_cast<uint32_t>(t));
}

uint64_t row_bytes(TensorType t, uint64_t n) {
  const TypeTraits* tr = type_traits(t);
  if (tr == nullptr || n % tr->block_size != 0) return 0;
  return n / tr->block_size * tr->type_size;
}

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
      return "u8";
    case ValueType::kInt8:
      return "i8";
    case ValueType::kUint16:
      return "u16";
    case ValueType::kInt16:
      return "i16";
    case ValueType::kUint32:
      return "u32";
    case ValueType::kInt32:
      return "i32";
    case ValueType::kFloat32:
      return "f32";
    case ValueType::kBool:
      return "bool";
    case ValueType::kString:
      return "string";
    case ValueType::kArray:
      return "array";
    case ValueType::kUint64:
      return "u64";
    case ValueType::kInt64:
      return "i64";
    case ValueType::kFloat64:
      return "f64";
  }
  return "unknown";
}

}  // namespace hearth::gguf
