// Helpers of the delta-row tests: payloads with the layout delta rows cut (groups of
// position-major runs), whose bytes at a position depend only on the tokens up to it,
// as a model's KV does, so a prefix's payload is a true prefix of every longer one's.
#pragma once

#include <cstdint>
#include <vector>

#include "test_util.h"

namespace hearth::cache::testing {

inline constexpr uint32_t kDeltaGroups = 6;  // e.g. 3 layers * (K, V)
inline constexpr uint32_t kDeltaBpp = 40;    // bytes per position per group

// The whole payload of `tokens`: group g, position p holds bytes mixed from (g, p, a
// running hash of tokens[0..p]).
inline std::vector<uint8_t> layout_payload(const std::vector<Token>& tokens,
                                           uint32_t groups = kDeltaGroups,
                                           uint32_t bpp = kDeltaBpp) {
  const size_t n = tokens.size();
  std::vector<uint8_t> out(size_t(groups) * n * bpp);
  for (uint32_t g = 0; g < groups; ++g) {
    uint64_t h = 0x9E3779B97F4A7C15ull * (g + 1);
    for (size_t p = 0; p < n; ++p) {
      h = (h ^ tokens[p]) * 0x100000001B3ull;
      uint64_t x = h ^ p;
      for (uint32_t b = 0; b < bpp; ++b) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        out[(size_t(g) * n + p) * bpp + b] = static_cast<uint8_t>(x >> 56);
      }
    }
  }
  return out;
}

inline KvcBuildMeta layout_meta(std::vector<Token> tokens, uint32_t groups = kDeltaGroups) {
  KvcBuildMeta m = make_meta(std::move(tokens));
  m.kv_groups = groups;
  return m;
}

}  // namespace hearth::cache::testing
