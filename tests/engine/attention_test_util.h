// Shared by the attention tests: a tiny deterministic generator of values in [-1, 1).
#pragma once

#include <cstdint>

namespace hearth::engine {

struct Lcg {
  uint32_t x;
  float next() {
    x = x * 1664525u + 1013904223u;
    return static_cast<float>((x >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
};

}  // namespace hearth::engine
