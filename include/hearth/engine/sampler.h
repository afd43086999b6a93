// Token sampling: greedy, or the chain
//   logit_bias -> penalties (repetition, frequency, presence over the last penalty_last_n tokens)
//   -> top_k -> top_p -> min_p -> temperature -> seeded draw.
// The draw uses hearth's own portable PRNG (xoshiro256** seeded through splitmix64) and
// its own float arithmetic, so the same seed, logits and history give the same token on
// every platform and standard library.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace hearth {

struct SamplingParams {
  float temperature = 0.8f;         // <= 0: greedy (argmax, lowest id on ties)
  int32_t top_k = 40;               // <= 0: disabled
  float top_p = 0.95f;              // >= 1: disabled
  float min_p = 0.05f;              // <= 0: disabled
  float repetition_penalty = 1.0f;  // 1: disabled; logit>0 divided by it, logit<0 multiplied
  int32_t penalty_last_n = 64;      // how many of the latest history tokens are penalized
  float frequency_penalty = 0.0f;   // subtracted once per occurrence
  float presence_penalty = 0.0f;    // subtracted once if present
  uint64_t seed = 0;
  // Added to the logits of these token ids before everything else (ids outside the
  // vocabulary are skipped; the runtime refuses them earlier).
  std::vector<std::pair<int32_t, float>> logit_bias;
};

// Portable PRNG: xoshiro256** seeded with splitmix64(seed).
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next_u64();
  // Uniform in [0, 1) with 53 random bits.
  double next_double();

 private:
  uint64_t s_[4];
};

class Sampler {
 public:
  explicit Sampler(SamplingParams params);

  // Picks the next token. history: the tokens so far (prompt + generated), used by
  // the penalties. Advances the PRNG (except when greedy).
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);

  // The logits the last sample() chose from, after logit_bias and the penalties and before
  // top_k / top_p / min_p / temperature (what logprobs report). Empty before any sample().
  std::span<const float> adjusted_logits() const { return penalized_; }

  // Restarts the PRNG from the seed.
  void reset();
  const SamplingParams& params() const { return params_; }

  // argmax with ties broken by the lowest id; -1 for empty logits.
  static int32_t greedy(std::span<const float> logits);

 private:
  struct Candidate {
    int32_t id;
    float logit;
    float p;
  };
  SamplingParams params_;
  Rng rng_;
  std::vector<Candidate> cand_;   // reused between calls
  std::vector<float> penalized_;  // reused between calls
  std::vector<int32_t> window_;   // reused between calls
};

}  // namespace hearth
