// Engine::embed_batch: several inputs packed into forward passes over the private
// embedding sequences, then pooled per input.
#include <algorithm>

#include "engine/model/engine_impl.h"

namespace hearth {
namespace {

// One input's vector(s) from its rows of the hidden states (n tokens of e floats).
std::vector<float> pool(const float* rows, size_t n, size_t e, Pooling pooling) {
  switch (pooling) {
    case Pooling::kNone:
      return std::vector<float>(rows, rows + n * e);
    case Pooling::kCls:
      return std::vector<float>(rows, rows + e);
    case Pooling::kLast:
      return std::vector<float>(rows + (n - 1) * e, rows + n * e);
    case Pooling::kMean:
      break;
  }
  std::vector<double> acc(e, 0.0);
  for (size_t t = 0; t < n; ++t)
    for (size_t i = 0; i < e; ++i) acc[i] += rows[t * e + i];
  std::vector<float> out(e);
  for (size_t i = 0; i < e; ++i) out[i] = static_cast<float>(acc[i] / static_cast<double>(n));
  return out;
}

}  // namespace

Result<std::vector<std::vector<float>>> Engine::embed_batch(
    std::span<const std::vector<int32_t>> inputs, Pooling pooling) {
  Impl& m = *impl_;
  const int32_t n_ctx = m.kv->n_ctx();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto n = static_cast<int64_t>(inputs[i].size());
    const std::string where = "embed_batch: input " + std::to_string(i) + ": ";
    if (n == 0) return InvalidArgument(where + "no tokens");
    if (n > n_ctx) {
      return OutOfRange(where + std::to_string(n) + " tokens exceed the context of " +
                        std::to_string(n_ctx));
    }
    if (!m.hp.causal && n > m.opts.n_batch) {
      return OutOfRange(where + std::to_string(n) + " tokens exceed n_batch " +
                        std::to_string(m.opts.n_batch) +
                        " (non-causal attention evaluates a whole input in one pass)");
    }
    for (int32_t t : inputs[i]) {
      if (t < 0 || t >= m.hp.n_vocab) {
        return OutOfRange(where + "token id " + std::to_string(t) +
                          " is outside the vocabulary [0, " + std::to_string(m.hp.n_vocab) + ")");
      }
    }
  }
  const size_t e = static_cast<size_t>(m.hp.n_embd);
  const int32_t first_seq = m.embed_seq();
  std::vector<std::vector<float>> out(inputs.size());
  std::vector<BatchToken> batch;
  std::vector<float> hidden;
  for (size_t begin = 0; begin < inputs.size();) {
    // As many inputs as the private sequences and n_batch take (an input longer than
    // n_batch, causal only, goes alone: run() splits it into chunks).
    size_t end = begin, tokens = 0;
    while (end < inputs.size() && end - begin < static_cast<size_t>(m.opts.n_embed_seq) &&
           (end == begin || tokens + inputs[end].size() <= static_cast<size_t>(m.opts.n_batch))) {
      tokens += inputs[end++].size();
    }
    batch.clear();
    for (size_t i = begin; i < end; ++i) {
      const int32_t seq = first_seq + static_cast<int32_t>(i - begin);
      m.kv->set_len(seq, 0);
      for (size_t p = 0; p < inputs[i].size(); ++p)
        batch.push_back({inputs[i][p], static_cast<int32_t>(p), seq, false});
    }
    const Status ran = m.run(batch, nullptr, &hidden);
    size_t row = 0;
    for (size_t i = begin; i < end; ++i)
      m.kv->set_len(first_seq + static_cast<int32_t>(i - begin), 0);
    HEARTH_RETURN_IF_ERROR(ran);
    for (size_t i = begin; i < end; ++i) {
      out[i] = pool(hidden.data() + row * e, inputs[i].size(), e, pooling);
      row += inputs[i].size();
    }
    begin = end;
  }
  return out;
}

}  // namespace hearth
