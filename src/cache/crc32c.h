// CRC32C (Castagnoli, reflected, init/xorout 0xFFFFFFFF) as used by the KVC
// trailer. Hardware paths (SSE4.2 crc32 on x86-64, ARMv8 CRC) are selected at run
// time; a table-driven fallback covers everything else.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hearth::cache {

// CRC32C of data[0..n). crc32c("123456789") == 0xE3069283.
uint32_t crc32c(const void* data, size_t n);
// Continue a CRC: crc32c(a||b) == crc32c_extend(crc32c(a), b).
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);
// Copies src[0..n) to dst (not overlapping) and continues crc over those bytes:
// crc32c_extend(crc, src, n) after memcpy(dst, src, n), reading src once.
uint32_t crc32c_copy_extend(uint32_t crc, void* dst, const void* src, size_t n);
// The CRC of a || b from the CRCs of its two parts and b's length:
// crc32c_combine(crc32c(a), crc32c(b), len_b) == crc32c(a || b). Lets two threads check
// the two halves of one payload. O(log len_b).
uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);
// The portable implementation, exposed for cross-checking in tests.
uint32_t crc32c_portable(uint32_t crc, const void* data, size_t n);
// "avx512-vpclmulqdq", "sse4.2", "armv8-crc" or "portable".
const char* crc32c_impl_name();

}  // namespace hearth::cache
