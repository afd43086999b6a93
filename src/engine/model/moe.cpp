// The mixture-of-experts FFN (qwen3moe, llama with experts), as llama.cpp's
// build_moe_ffn computes it: router logits (ffn_gate_inp, F32), their softmax, the
// n_expert_used most probable experts (highest first), their probabilities
// renormalized to sum 1; each chosen expert's SwiGLU FFN, scaled by its weight, and
// the scaled outputs added in that order.
//
// Only the chosen experts' weights are read, and the chunk's tokens are grouped by
// expert so that each expert's matrices are streamed once per chunk. A token's
// values depend only on its own input: matmul is batch-invariant, and the grouping
// only decides which rows share a call.
#include <algorithm>
#include <cmath>

#include "engine/kernels/canonical.h"
#include "engine/model/activation.h"
#include "engine/model/engine_impl.h"

namespace hearth {
namespace {

// Softmax of n router logits into probs: max, expf(x - max) (libm, as ggml's scalar
// path) summed in double in index order, times float(1 / sum).
void router_softmax(const float* logits, int32_t n, float* probs) {
  float max = -INFINITY;
  for (int32_t i = 0; i < n; ++i) max = std::max(max, logits[i]);
  double sum = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    probs[i] = std::exp(logits[i] - max);
    sum += static_cast<double>(probs[i]);
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int32_t i = 0; i < n; ++i) probs[i] *= inv;
}

// The most probable of n experts not among expert[0, j) (ties: lower id first).
int32_t best_unchosen(const float* probs, int32_t n, const int32_t* expert, int32_t j) {
  int32_t best = -1;
  for (int32_t i = 0; i < n; ++i) {
    bool taken = false;
    for (int32_t m = 0; m < j && !taken; ++m) taken = expert[m] == i;
    if (!taken && (best < 0 || probs[i] > probs[best])) best = i;
  }
  return best;
}

// The k most probable of n experts, highest first, and their probabilities divided by
// their sum (summed in double, in that order). With `runner_up`, the k-th is replaced
// by the best expert not chosen. Returns the router's margin: the k-th chosen
// expert's probability minus the best unchosen one's (+inf when all are chosen).
float choose_experts(const float* probs, int32_t n, int32_t k, bool runner_up, int32_t* expert,
                     float* weight) {
  for (int32_t j = 0; j < k; ++j) expert[j] = best_unchosen(probs, n, expert, j);
  const int32_t next = k < n ? best_unchosen(probs, n, expert, k) : -1;
  const float margin = next < 0 ? INFINITY : probs[expert[k - 1]] - probs[next];
  if (runner_up && next >= 0) expert[k - 1] = next;
  for (int32_t j = 0; j < k; ++j) weight[j] = probs[expert[j]];
  double sum = 0.0;
  for (int32_t j = 0; j < k; ++j) sum += static_cast<double>(weight[j]);
  const float total = static_cast<float>(sum);
  for (int32_t j = 0; j < k; ++j) weight[j] /= total;
  return margin;
}

}  // namespace

void Engine::Impl::ffn_moe(int64_t T, int32_t l) {
  const engine::LayerWeights& L = w.layers[static_cast<size_t>(l)];
  const int32_t e = hp.n_embd, n_exp = hp.n_expert, k = hp.n_expert_used, fe = hp.n_ff_exp;

  // Route every token.
  matmul(L.gate_inp, s.xn.data(), T, s.moe_probs.data());
  for (int64_t t = 0; t < T; ++t) {
    float* probs = s.moe_probs.data() + t * n_exp;
    router_softmax(probs, n_exp, probs);
    const bool last = s.last_chunk && t == T - 1;
    const float margin = choose_experts(probs, n_exp, k, last && s.runner_up_layer == l,
                                        s.moe_expert.data() + t * k, s.moe_weight.data() + t * k);
    if (last) s.router_margin[static_cast<size_t>(l)] = margin;
  }

  // Group the (token, slot) pairs by expert (counting sort: stable, so in token order).
  std::vector<int32_t>& begin = s.moe_begin;
  std::fill(begin.begin(), begin.end(), 0);
  const int64_t n_pairs = T * k;
  for (int64_t p = 0; p < n_pairs; ++p) ++begin[static_cast<size_t>(s.moe_expert[p]) + 1];
  for (int32_t x = 0; x < n_exp; ++x) begin[x + 1] += begin[x];
  std::vector<int32_t>& next = s.moe_next;  // each expert's next free row
  std::copy(begin.begin(), begin.end() - 1, next.begin());
  for (int64_t p = 0; p < n_pairs; ++p) {
    const int32_t row = next[static_cast<size_t>(s.moe_expert[p])]++;
    s.moe_pairs[static_cast<size_t>(row)] = static_cast<int32_t>(p);
    s.moe_row[static_cast<size_t>(p)] = row;
  }
  for (int64_t r = 0; r < n_pairs; ++r) {
    const int64_t t = s.moe_pairs[static_cast<size_t>(r)] / k;
    std::copy_n(s.xn.data() + t * e, e, s.moe_x.data() + r * e);
  }

  // Each routed expert on its tokens' rows.
  for (int32_t x = 0; x < n_exp; ++x) {
    const int64_t r0 = begin[x], n = begin[x + 1] - begin[x];
    if (n == 0) continue;
    const size_t xi = static_cast<size_t>(x);
    float* gate = s.gate.data() + r0 * fe;
    float* up = s.up.data() + r0 * fe;
    matmul_many({{&L.gate_exps[xi], gate}, {&L.up_exps[xi], up}}, s.moe_x.data() + r0 * e, n);
    for_each_token(n, 16 * fe,
                   [&](int64_t i) { engine::silu_mul(gate + i * fe, up + i * fe, fe); });
    matmul(L.down_exps[xi], gate, n, s.moe_y.data() + r0 * e);
  }

  // Weighted sum per token, slots in order: y0 * w0 + y1 * w1 + ...
  for_each_token(T, 2 * k * e, [&](int64_t t) {
    float* out = s.proj.data() + t * e;
    for (int32_t j = 0; j < k; ++j) {
      const float wj = s.moe_weight[static_cast<size_t>(t * k + j)];
      const float* y = s.moe_y.data() + static_cast<int64_t>(s.moe_row[t * k + j]) * e;
      for (int32_t i = 0; i < e; ++i) out[i] = j == 0 ? y[i] * wj : out[i] + y[i] * wj;
    }
  });
}

}  // namespace hearth
