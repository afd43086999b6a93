// LoRA in the forward pass: after a base matmul, each token gets the deltas of its own
// sequence's adapters (Engine::set_lora), added in the order the sequence lists them.
// Tokens sharing an adapter go through its factors together, by the same batch-invariant
// matmul as the base weights, so a token's values never depend on its batch.
#include <algorithm>

#include "engine/model/engine_impl.h"
#include "engine/model/lora.h"

namespace hearth {

using engine::LoraPair;
using engine::LoraTarget;

Result<std::shared_ptr<const LoraAdapter>> Engine::load_lora(const std::string& path) const {
  return LoraAdapter::load(path, impl_->file, impl_->hp, impl_.get());
}

Status Engine::set_lora(int32_t seq, std::vector<LoraUse> uses) {
  if (seq < 0 || seq >= impl_->opts.n_seq_max)
    return InvalidArgument("set_lora: seq " + std::to_string(seq) + " is outside [0, " +
                           std::to_string(impl_->opts.n_seq_max) + ")");
  for (size_t i = 0; i < uses.size(); ++i) {
    if (uses[i].adapter == nullptr || uses[i].adapter->owner() != impl_.get())
      return InvalidArgument("set_lora: uses[" + std::to_string(i) +
                             "] is not an adapter loaded by this engine");
  }
  // Scale 0 is the base model, bit for bit: such a use computes nothing.
  std::erase_if(uses, [](const LoraUse& u) { return u.scale == 0.0f; });
  if (impl_->gpu && !uses.empty()) {
    return Unsupported("set_lora: LoRA adapters are not implemented on the GPU layers (device " +
                       impl_->opts.device + "); load the model with device cpu to use them");
  }
  impl_->seq_lora.resize(static_cast<size_t>(impl_->opts.n_seq_max));
  impl_->seq_lora[static_cast<size_t>(seq)] = std::move(uses);
  return OkStatus();
}

void Engine::Impl::lora_plan(std::span<const BatchToken> chunk) {
  s.lora_chunk = chunk;
  s.lora_uses.assign(chunk.size(), nullptr);
  s.lora_max_uses = 0;
  for (size_t t = 0; t < chunk.size(); ++t) {
    const auto q = static_cast<size_t>(chunk[t].seq);
    if (q >= seq_lora.size() || seq_lora[q].empty()) continue;
    s.lora_uses[t] = &seq_lora[q];
    s.lora_max_uses = std::max(s.lora_max_uses, seq_lora[q].size());
  }
}

void Engine::Impl::lora_add(const LoraSite& site, const float* x, float* y, int64_t n_rows,
                            const int32_t* row_token) {
  if (s.lora_max_uses == 0) return;
  auto uses_of = [&](int64_t r) {
    return s.lora_uses[static_cast<size_t>(row_token ? row_token[r] : r)];
  };
  // Use k of every token before use k + 1: each token's sum runs in its own list's order.
  for (size_t k = 0; k < s.lora_max_uses; ++k) {
    s.lora_distinct.clear();
    for (int64_t r = 0; r < n_rows; ++r) {
      const std::vector<LoraUse>* u = uses_of(r);
      if (u == nullptr || u->size() <= k) continue;
      const LoraAdapter* a = (*u)[k].adapter.get();
      if (std::find(s.lora_distinct.begin(), s.lora_distinct.end(), a) == s.lora_distinct.end())
        s.lora_distinct.push_back(a);
    }
    for (const LoraAdapter* a : s.lora_distinct) {
      const LoraPair* p = site.embd     ? a->token_embd()
                          : site.output ? a->output()
                                        : a->layer(site.layer, site.target);
      if (p == nullptr) continue;
      s.lora_rows.clear();
      s.lora_scale.clear();
      for (int64_t r = 0; r < n_rows; ++r) {
        const std::vector<LoraUse>* u = uses_of(r);
        if (u == nullptr || u->size() <= k || (*u)[k].adapter.get() != a) continue;
        s.lora_rows.push_back(static_cast<int32_t>(r));
        s.lora_scale.push_back(p->scale((*u)[k].scale, a->alpha()));
      }
      const auto n = static_cast<int64_t>(s.lora_rows.size());
      const int64_t rank = p->rank, out = p->b.rows;
      s.lora_t.resize(static_cast<size_t>(n * rank));
      if (site.embd) {  // A's row of each token
        for (int64_t i = 0; i < n; ++i) {
          const int64_t tok = s.lora_chunk[static_cast<size_t>(s.lora_rows[i])].token;
          std::copy_n(p->a_data.data() + tok * rank, rank, s.lora_t.data() + i * rank);
        }
      } else {
        const int64_t in = p->a.cols;
        s.lora_x.resize(static_cast<size_t>(n * in));
        for (int64_t i = 0; i < n; ++i)
          std::copy_n(x + s.lora_rows[static_cast<size_t>(i)] * in, in, s.lora_x.data() + i * in);
        matmul(p->a, s.lora_x.data(), n, s.lora_t.data());
      }
      s.lora_d.resize(static_cast<size_t>(n * out));
      matmul(p->b, s.lora_t.data(), n, s.lora_d.data());
      for (int64_t i = 0; i < n; ++i) {
        float* yr = y + s.lora_rows[static_cast<size_t>(i)] * out;
        const float* d = s.lora_d.data() + i * out;
        const float sc = s.lora_scale[static_cast<size_t>(i)];
        for (int64_t j = 0; j < out; ++j) yr[j] += d[j] * sc;
      }
    }
  }
}

}  // namespace hearth
