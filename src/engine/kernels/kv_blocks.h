// The KV store's layouts as the attention code reads them (engine/model/kv_store.h):
// F16 K in tiles of kKTile slots, dimension-major, and the quantized blocks
// (hearth/engine/kv_type.h): a block's F16 scale as a float and its 32 integers (Q8_0:
// q; Q4_0: q - 8), in element order. Header-only and plain, for the reference and the
// kernels alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hearth/engine/fp16.h"
#include "hearth/engine/kv_type.h"

namespace hearth::engine::canon {

// F16 K is kept in tiles of kKTile slots, each [column][kKTile]: element c of slot s
// lies at halves k_tile_offset(s, c, kv_dim) from the layer's K. A tile is the same
// bytes as its kKTile rows would be, so the slots of a layer round up to whole tiles.
// Decode attention reads a KV head's K for 16 positions as head_dim vectors of 16
// halves (one per element), with no transpose (docs/engine.md, "KV layout").
inline constexpr int32_t kKTile = 16;

inline constexpr size_t k_tile_offset(int32_t slot, int32_t c, int32_t kv_dim) {
  return static_cast<size_t>(slot / kKTile) * kKTile * static_cast<size_t>(kv_dim) +
         static_cast<size_t>(c) * kKTile + static_cast<size_t>(slot % kKTile);
}

inline constexpr size_t kv_block_bytes(KvType t) {
  return t == KvType::kQ4_0 ? 18 : 34;
}

inline float kv_block_scale(const uint8_t* block) {
  uint16_t d;
  std::memcpy(&d, block, 2);
  return fp16_to_fp32(d);
}

inline void kv_block_ints(KvType t, const uint8_t* block, int8_t* out) {
  const uint8_t* qs = block + 2;
  if (t == KvType::kQ4_0) {
    for (int j = 0; j < 16; ++j) {
      out[j] = static_cast<int8_t>((qs[j] & 0x0F) - 8);
      out[j + 16] = static_cast<int8_t>((qs[j] >> 4) - 8);
    }
    return;
  }
  std::memcpy(out, qs, 32);
}

}  // namespace hearth::engine::canon
