#include "engine/model/attention.h"

#include <cmath>

#include "engine/model/kernels_bridge.h"
#include "hearth/fp16.h"

namespace hearth::engine {

void attend_head(const KvStore& kv, const HeadQuery& hq, int32_t head_dim, float scale,
                 float* scores, float* out) {
  const int32_t n = hq.pos + 1;
  const int64_t off = static_cast<int64_t>(hq.kv_head) * head_dim;
  float max = -INFINITY;
  for (int32_t p = 0; p < n; ++p) {
    const float s = kb::dot_f16(kv.k_row(hq.seq, hq.layer, p) + off, hq.q, head_dim) * scale;
    scores[p] = s;
    if (s > max) max = s;
  }
  double sum = 0.0;
  for (int32_t p = 0; p < n; ++p) {
    const float e = std::exp(scores[p] - max);
    scores[p] = e;
    sum += static_cast<double>(e);
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int32_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  for (int32_t p = 0; p < n; ++p) {
    const float prob = fp16_to_fp32(fp32_to_fp16(scores[p] * inv));
    if (prob == 0.0f) continue;  // adds exactly nothing
    kb::axpy_f16(out, prob, kv.v_row(hq.seq, hq.layer, p) + off, head_dim);
  }
}

}  // namespace hearth::engine
