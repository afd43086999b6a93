#include "runtime/logprobs.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hearth::runtime {

TokenLogprobs token_logprobs(std::span<const float> logits, TokenId chosen, int32_t top_n) {
  TokenLogprobs out;
  out.token = chosen;
  if (logits.empty()) return out;
  double max = logits[0];
  for (float l : logits) max = std::max(max, static_cast<double>(l));
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - max);
  const double log_z = max + std::log(sum);
  auto logprob = [&](TokenId id) {
    return static_cast<float>(static_cast<double>(logits[static_cast<size_t>(id)]) - log_z);
  };
  if (chosen >= 0 && static_cast<size_t>(chosen) < logits.size()) out.logprob = logprob(chosen);
  const size_t n = std::min(static_cast<size_t>(std::max(top_n, 0)), logits.size());
  if (n == 0) return out;
  std::vector<TokenId> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<TokenId>(i);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(),
                    [&](TokenId a, TokenId b) {
                      const float la = logits[static_cast<size_t>(a)];
                      const float lb = logits[static_cast<size_t>(b)];
                      return la > lb || (la == lb && a < b);
                    });
  out.top.reserve(n);
  for (size_t i = 0; i < n; ++i) out.top.push_back({ids[i], logprob(ids[i])});
  return out;
}

}  // namespace hearth::runtime
