// Element type of the KV cache (EngineOptions::kv_type): F16 (the default), or
// llama.cpp's 32-element block formats Q8_0 (F16 scale d + 32 int8, value = d * q;
// 34 bytes) and Q4_0 (F16 scale d + 16 bytes of nibbles, element j in the low
// nibble of byte j and element j + 16 in its high nibble, value = d * (q - 8);
// 18 bytes). A quantized type needs head_dim to be a multiple of 32 (a block never
// straddles two heads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hearth {

enum class KvType : uint8_t { kF16 = 0, kQ8_0 = 1, kQ4_0 = 2 };

inline constexpr int32_t kKvBlock = 32;  // elements per block of the quantized types

// "f16", "q8_0", "q4_0".
inline const char* kv_type_name(KvType t) {
  switch (t) {
    case KvType::kQ8_0:
      return "q8_0";
    case KvType::kQ4_0:
      return "q4_0";
    case KvType::kF16:
      break;
  }
  return "f16";
}

// The inverse of kv_type_name (exact, lower case); nullopt for anything else.
inline std::optional<KvType> kv_type_from_name(std::string_view s) {
  if (s == "f16") return KvType::kF16;
  if (s == "q8_0") return KvType::kQ8_0;
  if (s == "q4_0") return KvType::kQ4_0;
  return std::nullopt;
}

// Bytes of n elements (n a multiple of kKvBlock for the quantized types).
inline size_t kv_row_bytes(KvType t, int64_t n) {
  const size_t u = static_cast<size_t>(n);
  switch (t) {
    case KvType::kQ8_0:
      return u / kKvBlock * 34;
    case KvType::kQ4_0:
      return u / kKvBlock * 18;
    case KvType::kF16:
      break;
  }
  return u * 2;
}

}  // namespace hearth
