// See gen_model_rng.h. Every floating-point result here must be reproducible
// bit for bit, so contraction of a*b+c into fused multiply-adds is switched off
// for this file (FMA would round differently on machines that have it).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "cli/gen_model_rng.h"

#include <cmath>

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

double portable_log(double x) {
  int e = 0;
  double m = std::frexp(x, &e);  // exact: x = m * 2^e, m in [0.5, 1)
  if (m < kSqrtHalf) {
    m *= 2.0;  // exact
    e -= 1;
  }
  // log(m) = 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.172: the odd series converges fast.
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  const double series = 2.0 * s * (1.0 + s2 * (1.0 / 3 + s2 * (1.0 / 5 + s2 * (1.0 / 7 +
                        s2 * (1.0 / 9 + s2 * (1.0 / 11 + s2 * (1.0 / 13 + s2 * (1.0 / 15 +
                        s2 * (1.0 / 17 + s2 * (1.0 / 19))))))))));
  return static_cast<double>(e) * kLn2 + series;
}

void portable_sincos_turns(double turns, double* s, double* c) {
  const double t = turns * 4.0;           // exact scaling by a power of two
  const double q = std::floor(t);         // quadrant 0..3
  double f = t - q;                       // exact: position within the quadrant
  const bool mirror = f > 0.5;            // use the co-function for the upper half
  if (mirror) f = 1.0 - f;                // exact for f in (0.5, 1)
  double ss, cc;
  sincos_small(f * kHalfPi, &ss, &cc);
  if (mirror) {
    const double tmp = ss;
    ss = cc;
    cc = tmp;
  }
  switch (static_cast<int>(q) & 3) {
    case 0: *s = ss; *c = cc; break;
    case 1: *s = cc; *c = -ss; break;
    case 2: *s = -ss; *c = -cc; break;
    default: *s = -cc; *c = ss; break;
  }
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

void NormalGenerator::fill(float* out, size_t n, double stddev) {
  constexpr double kInv53 = 1.0 / 9007199254740992.0;  // 2^-53
  size_t i = 0;
  while (i < n) {
    const double u1 = static_cast<double>((next_u64() >> 11) + 1) * kInv53;  // (0, 1]
    const double u2 = static_cast<double>(next_u64() >> 11) * kInv53;        // [0, 1)
    const double r = std::sqrt(-2.0 * portable_log(u1)) * stddev;  // sqrt is IEEE-exact
    double s, c;
    portable_sincos_turns(u2, &s, &c);
    out[i++] = static_cast<float>(r * c);
    if (i < n) out[i++] = static_cast<float>(r * s);
  }
}

}  // namespace hearth::cli
