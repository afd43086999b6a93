// Deterministic token sequences for the engine's tests: BOS (id 1) first, then ids from
// the LCG every engine benchmark uses (x = x * 1664525 + 1013904223, id = (x >> 8) % n_vocab).
#pragma once

#include <cstdint>
#include <vector>

namespace hearth::testing {

inline std::vector<int32_t> lcg_tokens(int32_t n, int32_t n_vocab, uint32_t seed) {
  std::vector<int32_t> out(static_cast<size_t>(n));
  uint32_t x = seed;
  for (auto& t : out) {
    x = x * 1664525u + 1013904223u;
    t = static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(n_vocab));
  }
  if (!out.empty()) out[0] = 1;
  return out;
}

}  // namespace hearth::testing
