#include "common/stream_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hearth {
namespace {

#if defined(__x86_64__)
// d is 64-byte aligned, n a multiple of 64.
__attribute__((target("avx512f"))) void stream_lines_avx512(uint8_t* d, const uint8_t* s,
                                                            size_t n) {
  size_t i = 0;
  for (; i + 256 <= n; i += 256) {
    const __m512i a = _mm512_loadu_si512(s + i), b = _mm512_loadu_si512(s + i + 64);
    const __m512i c = _mm512_loadu_si512(s + i + 128), e = _mm512_loadu_si512(s + i + 192);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i), a);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i + 64), b);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i + 128), c);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i + 192), e);
  }
  for (; i < n; i += 64)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i), _mm512_loadu_si512(s + i));
}

__attribute__((target("avx2"))) void stream_lines_avx2(uint8_t* d, const uint8_t* s, size_t n) {
  for (size_t i = 0; i < n; i += 64) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i + 32), b);
  }
}

void stream_lines_sse2(uint8_t* d, const uint8_t* s, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
  }
}

using LinesFn = void (*)(uint8_t*, const uint8_t*, size_t);

LinesFn pick_lines() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return stream_lines_avx512;
  if (__builtin_cpu_supports("avx2")) return stream_lines_avx2;
  return stream_lines_sse2;
}
#endif

}  // namespace

void stream_copy_unfenced(void* dst, const void* src, size_t n) {
#if defined(__x86_64__)
  static const LinesFn lines = pick_lines();
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  const size_t head = std::min(n, (64 - reinterpret_cast<uintptr_t>(d) % 64) % 64);
  const size_t body = (n - head) / 64 * 64;
  std::memcpy(d, s, head);
  lines(d + head, s + head, body);
  std::memcpy(d + head + body, s + head + body, n - head - body);
#else
  std::memcpy(dst, src, n);
#endif
}

void stream_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

void stream_copy(void* dst, const void* src, size_t n) {
  stream_copy_unfenced(dst, src, n);
  stream_fence();
}

}  // namespace hearth
