// Portable normal random numbers for `hearth gen-model`: the same seed gives the
// same floats on every machine, compiler and C library. std::normal_distribution
// and libm's log/sin/cos promise no such thing, so this file brings its own:
// xoshiro256** (seeded through splitmix64) for uniforms, Box-Muller for normals,
// with log and sin/cos evaluated by fixed polynomials in double precision using
// only IEEE-exact basic operations (and fused multiply-add contraction disabled).
#pragma once

#include <cstddef>
#include <cstdint>

namespace hearth::cli {

// splitmix64 step: a well-mixed 64-bit function of its input.
uint64_t splitmix64(uint64_t x);

// Seed of an independent stream, derived from a user seed and two stream indices
// (e.g. tensor number and chunk number), so generation can run chunks in parallel.
uint64_t stream_seed(uint64_t seed, uint64_t a, uint64_t b);

class NormalGenerator {
 public:
  explicit NormalGenerator(uint64_t seed);
  // n samples of N(0, stddev^2), rounded to float.
  void fill(float* out, size_t n, double stddev);
  uint64_t next_u64();

 private:
  uint64_t s_[4];
};

}  // namespace hearth::cli
