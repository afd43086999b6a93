// Unpacking of the packed six-bit sub-block scales of the k-quants, shared by
// dequantization, quantization and the dot-product kernels.
#pragma once

#include <cstdint>
#include <cstring>

namespace hearth::engine {

// Q4_K / Q5_K: 8 scales and 8 mins of 6 bits in 12 bytes. Sub-block j < 4 keeps
// its low 6 bits in bytes j / j+4; sub-blocks 4..7 keep their low nibbles in
// bytes 8..11 and their top 2 bits in the spare top bits of bytes 0..7.
inline void k4_scale_min(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = q[j] & 63;
    *min = q[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// All 8 scales and 8 mins at once, four bytes per operation (same values as
// k4_scale_min for each j).
inline void k4_unpack_scales(const uint8_t* q, uint8_t scales[8], uint8_t mins[8]) {
  uint32_t u0, u1, u2;
  std::memcpy(&u0, q, 4);
  std::memcpy(&u1, q + 4, 4);
  std::memcpy(&u2, q + 8, 4);
  const uint32_t low6 = 0x3f3f3f3fu, low4 = 0x0f0f0f0fu, low2 = 0x03030303u;
  const uint32_t s_lo = u0 & low6;
  const uint32_t m_lo = u1 & low6;
  const uint32_t s_hi = (u2 & low4) | (((u0 >> 6) & low2) << 4);
  const uint32_t m_hi = ((u2 >> 4) & low4) | (((u1 >> 6) & low2) << 4);
  std::memcpy(scales, &s_lo, 4);
  std::memcpy(scales + 4, &s_hi, 4);
  std::memcpy(mins, &m_lo, 4);
  std::memcpy(mins + 4, &m_hi, 4);
}

// Q3_K: 16 scales of 6 bits (stored biased by 32) in 12 bytes: low nibbles of
// scales 0..7 in the low nibbles of bytes 0..7, of 8..15 in their high nibbles,
// top 2 bits of scale j in bits 2*(j/4) of byte 8 + j%4. Output is biased (0..63).
inline void unpack_q3k_scales(const uint8_t* packed, int8_t out[16]) {
  for (int j = 0; j < 16; ++j) {
    const int lo = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
    const int hi = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = static_cast<int8_t>(lo | (hi << 4));
  }
}

// Keeps a product rounded on its own: the compiler may not fuse it into a
// following add (GCC contracts a*b+c into an FMA even in ISO mode).
inline float rounded(float v) {
#if defined(__x86_64__) || defined(__i386__)
  asm("" : "+x"(v));
#elif defined(__aarch64__)
  asm("" : "+w"(v));
#else
  volatile float keep = v;
  v = keep;
#endif
  return v;
}

}  // namespace hearth::engine
