// Constants of the GGUF container layout shared by the reader and the writer.
#pragma once

#include <cstdint>

namespace hearth::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr uint32_t kMinVersion = 2;
inline constexpr uint32_t kMaxVersion = 3;
inline constexpr uint32_t kWriteVersion = 3;
inline constexpr uint64_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxDims = 4;
// Arrays of arrays deeper than this are rejected (real files use depth 1).
inline constexpr int kMaxArrayDepth = 8;
inline constexpr const char* kAlignmentKey = "general.alignment";

// Fixed size in bytes of a scalar value type, 0 for string/array/unknown.
inline uint64_t scalar_size(uint32_t value_type) {
  switch (value_type) {
    case 0: case 1: case 7: return 1;       // u8 i8 bool
    case 2: case 3: return 2;               // u16 i16
    case 4: case 5: case 6: return 4;       // u32 i32 f32
    case 10: case 11: case 12: return 8;    // u64 i64 f64
    default: return 0;
  }
}

}  // namespace hearth::gguf
