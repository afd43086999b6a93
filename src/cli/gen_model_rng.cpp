// See gen_model_rng.h. Every floating-point result here must be reproducible
// bit for bit, so contraction of a*b+c into fused multiply-adds is switched off
// for this file (FMA would round differently on machines that have it).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "cli/gen_model_rng.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hearth::cli {
namespace {

inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kHalfPi = 1.57079632679489661923;
constexpr double kSqrtHalf = 0.70710678118654752440;

// sin and cos of x in [0, pi/4] by Taylor polynomials (|error| < 1e-16 there).
void sincos_small(double x, double* s, double* c) {
  const double x2 = x * x;
  *s = x * (1.0 + x2 * (-1.0 / 6 + x2 * (1.0 / 120 + x2 * (-1.0 / 5040 + x2 * (1.0 / 362880 +
           x2 * (-1.0 / 39916800 + x2 * (1.0 / 6227020800.0 + x2 * (-1.0 / 1307674368000.0))))))));
  *c = 1.0 + x2 * (-0.5 + x2 * (1.0 / 24 + x2 * (-1.0 / 720 + x2 * (1.0 / 40320 +
       x2 * (-1.0 / 3628800 + x2 * (1.0 / 479001600.0 + x2 * (-1.0 / 87178291200.0)))))));
}

}  // namespace

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t stream_seed(uint64_t seed, uint64_t a, uint64_t b) {
  return splitmix64(splitmix64(splitmix64(seed) ^ a) ^ (b * 0xd1b54a32d192ed03ull));
}

NormalGenerator::NormalGenerator(uint64_t seed) {
  uint64_t x = seed;
  for (auto& word : s_) {
    x = splitmix64(x);
    word = x;
  }
}

uint64_t NormalGenerator::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

// Bits 63..12 of x as a double in [1, 2): exact, and vectorizable (no int->double).
static inline double unit_interval_plus_one(uint64_t x) {
  const uint64_t bits = (x >> 12) | 0x3ff0000000000000ull;
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

// Branch-free selection on bit masks (all ones or all zeros), which the compiler
// vectorizes where FP conditionals would be kept as branches.
static inline uint64_t mask_if(bool c) { return 0 - static_cast<uint64_t>(c); }
static inline double select(uint64_t mask, double a, double b) {
  uint64_t x, y;
  std::memcpy(&x, &a, 8);
  std::memcpy(&y, &b, 8);
  const uint64_t z = (x & mask) | (y & ~mask);
  double d;
  std::memcpy(&d, &z, 8);
  return d;
}
// Flips the sign of v where sign_mask has bit 63 set (exact, like negation).
static inline double flip_sign(double v, uint64_t sign_mask) {
  uint64_t x;
  std::memcpy(&x, &v, 8);
  x ^= sign_mask & (uint64_t{1} << 63);
  double d;
  std::memcpy(&d, &x, 8);
  return d;
}

// Box-Muller on one pair of uniforms, written without branches so that the batch
// loop below vectorizes. log uses atanh's odd series after exact range
// reduction; sin/cos use Taylor polynomials on [0, pi/4] after exact quadrant folding.
static inline void box_muller(uint64_t a, uint64_t b, double* radius_sq, double* cos_out,
                              double* sin_out) {
  const double u1 = 2.0 - unit_interval_plus_one(a);  // (0, 1]
  const double u2 = unit_interval_plus_one(b) - 1.0;  // [0, 1)
  // log(u1): u1 = m * 2^e with m in [sqrt(1/2), sqrt(2)).
  uint64_t bits;
  std::memcpy(&bits, &u1, 8);
  int32_t e = static_cast<int32_t>((bits >> 52) & 0x7ff) - 1022;
  const uint64_t mbits = (bits & 0x000fffffffffffffull) | 0x3fe0000000000000ull;
  double m;
  std::memcpy(&m, &mbits, 8);
  const uint64_t low = mask_if(m < kSqrtHalf);
  m = select(low, m * 2.0, m);
  e -= static_cast<int32_t>(low & 1);
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  const double series = 2.0 * s * (1.0 + s2 * (1.0 / 3 + s2 * (1.0 / 5 + s2 * (1.0 / 7 +
                        s2 * (1.0 / 9 + s2 * (1.0 / 11 + s2 * (1.0 / 13 + s2 * (1.0 / 15 +
                        s2 * (1.0 / 17 + s2 * (1.0 / 19))))))))));
  const double log_u1 = static_cast<double>(e) * kLn2 + series;
  *radius_sq = -2.0 * log_u1;  // the square root is taken in a separate loop
  // sin/cos(2 pi u2) from the quadrant and a reduced angle in [0, pi/4].
  const double t = u2 * 4.0;
  const double q = std::floor(t);
  double f = t - q;
  const uint64_t mirror = mask_if(f > 0.5);
  f = select(mirror, 1.0 - f, f);
  double ss, cc;
  sincos_small(f * kHalfPi, &ss, &cc);
  const int64_t quadrant = static_cast<int64_t>(q);
  const uint64_t odd = 0 - static_cast<uint64_t>(quadrant & 1);
  const uint64_t negate = static_cast<uint64_t>(quadrant & 2) << 62;  // the sign bit
  const double s0 = select(mirror, cc, ss);
  const double c0 = select(mirror, ss, cc);
  const double s1 = select(odd, c0, s0);
  const double c1 = select(odd, flip_sign(s0, ~uint64_t{0} << 63), c0);
  *cos_out = flip_sign(c1, negate);
  *sin_out = flip_sign(s1, negate);
}

void NormalGenerator::fill(float* out, size_t n, double stddev) {
  constexpr size_t kBatch = 256;  // pairs per batch
  uint64_t raw[2 * kBatch];
  double radius[kBatch], cosv[kBatch], sinv[kBatch];
  float pairs[2 * kBatch];
  size_t done = 0;
  while (done < n) {
    const size_t want = std::min(n - done, 2 * kBatch);
    const size_t n_pairs = (want + 1) / 2;
    for (size_t i = 0; i < 2 * n_pairs; ++i) raw[i] = next_u64();
    // Three loops: the first and last vectorize; sqrt (with its errno check) sits
    // alone in the middle one.
    for (size_t i = 0; i < n_pairs; ++i) {
      box_muller(raw[2 * i], raw[2 * i + 1], &radius[i], &cosv[i], &sinv[i]);
    }
    for (size_t i = 0; i < n_pairs; ++i) radius[i] = std::sqrt(radius[i]) * stddev;
    for (size_t i = 0; i < n_pairs; ++i) {
      pairs[2 * i] = static_cast<float>(radius[i] * cosv[i]);
      pairs[2 * i + 1] = static_cast<float>(radius[i] * sinv[i]);
    }
    std::memcpy(out + done, pairs, want * sizeof(float));
    done += want;
  }
}

}  // namespace hearth::cli
