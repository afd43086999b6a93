// layer_ops.h on the host, for the emulated GPU: the CPU engine's own definitions
// (engine/model/norm, rope; canon::silu_mul; fp16 rounding) and a plain per-token attention
// over the emulated device KV, so every output depends only on its token's inputs.
#include <cmath>
#include <vector>

#include "emu_queue.h"
#include "engine/cuda/layer_ops.h"
#include "engine/kernels/canonical.h"
#include "engine/model/norm.h"
#include "engine/model/rope.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine::cuda {

Error rms_norm(const float* x, const float* w, int32_t n, float eps, int64_t T, float* y,
               const Stream&) {
  emu::submit([=] {
    for (int64_t t = 0; t < T; ++t) engine::rms_norm(x + t * n, w, n, eps, y + t * n);
  });
  return {};
}

Error add_rms_norm(float* x, const float* p, const float* w, int32_t n, float eps, int64_t T,
                   float* y, const Stream&) {
  emu::submit([=] {
    for (int64_t t = 0; t < T; ++t) {
      for (int32_t i = 0; i < n; ++i) x[t * n + i] += p[t * n + i];
      engine::rms_norm(x + t * n, w, n, eps, y + t * n);
    }
  });
  return {};
}

Error add(float* x, const float* p, int64_t count, const Stream&) {
  emu::submit([=] {
    for (int64_t i = 0; i < count; ++i) x[i] += p[i];
  });
  return {};
}

Error add_bias(float* x, const float* b, int32_t n, int64_t T, const Stream&) {
  emu::submit([=] {
    for (int64_t t = 0; t < T; ++t)
      for (int32_t i = 0; i < n; ++i) x[t * n + i] += b[i];
  });
  return {};
}

Error head_rms_norm(float* x, const float* w, int32_t n_heads, int32_t head_dim, float eps,
                    int64_t T, const Stream&) {
  emu::submit([=] {
    for (int64_t h = 0; h < T * n_heads; ++h)
      engine::rms_norm(x + h * head_dim, w, head_dim, eps, x + h * head_dim);
  });
  return {};
}

Error rope(float* x, int32_t n_heads, int32_t head_dim, int32_t n_rot, const float* cs, bool neox,
           int64_t T, const Stream&) {
  emu::submit([=] {
    for (int64_t t = 0; t < T; ++t)
      engine::rope_apply(x + t * n_heads * head_dim, n_heads, head_dim, n_rot, cs + t * n_rot,
                         neox);
  });
  return {};
}

Error silu_mul(float* g, const float* u, int64_t count, const Stream&) {
  emu::submit([=] {
    for (int64_t i = 0; i < count; ++i) g[i] = canon::silu_mul(g[i], u[i]);
  });
  return {};
}

Error gather_rows(const float* x, const int32_t* idx, int64_t count, int32_t n, float* out,
                  const Stream&) {
  emu::submit([=] {
    for (int64_t j = 0; j < count; ++j)
      for (int32_t i = 0; i < n; ++i) out[j * n + i] = x[static_cast<int64_t>(idx[j]) * n + i];
  });
  return {};
}

Error store_kv_and_round_q(const float* q, const float* k, const float* v, const int32_t* seq,
                           const int32_t* pos, int64_t T, int32_t q_dim, float q_scale,
                           const KvLayer& kv, uint16_t* q16, const Stream&) {
  emu::submit([=] {
    for (int64_t t = 0; t < T; ++t) {
      uint16_t* kr = kv.k + seq[t] * kv.seq_stride + static_cast<int64_t>(pos[t]) * kv.kv_dim;
      uint16_t* vr = kr + kv.v_offset;
      for (int32_t i = 0; i < kv.kv_dim; ++i) {
        kr[i] = fp32_to_fp16(k[t * kv.kv_dim + i]);
        vr[i] = fp32_to_fp16(v[t * kv.kv_dim + i]);
      }
      for (int32_t i = 0; i < q_dim; ++i)
        q16[t * q_dim + i] =
            fp32_to_fp16(q_scale == 1.0f ? q[t * q_dim + i] : q[t * q_dim + i] * q_scale);
    }
  });
  return {};
}

Error attention(const uint16_t* q16, const KvLayer& kv, const int32_t* seq, const int32_t* pos,
                int64_t T, int32_t n_head, int32_t n_head_kv, int32_t head_dim, float scale,
                int32_t, float* out, void*, size_t, const Stream&) {
  emu::submit([=] {
    const int32_t group = n_head / n_head_kv;
    std::vector<float> p;
    for (int64_t t = 0; t < T; ++t) {
      const int32_t n = pos[t] + 1;
      p.resize(static_cast<size_t>(n));
      const uint16_t* k0 = kv.k + seq[t] * kv.seq_stride;
      for (int32_t h = 0; h < n_head; ++h) {
        const uint16_t* q = q16 + (t * n_head + h) * head_dim;
        const int64_t off = static_cast<int64_t>(h / group) * head_dim;
        float max = -INFINITY;
        for (int32_t j = 0; j < n; ++j) {
          const uint16_t* kr = k0 + static_cast<int64_t>(j) * kv.kv_dim + off;
          float s = 0.0f;
          for (int32_t d = 0; d < head_dim; ++d) s += fp16_to_fp32(q[d]) * fp16_to_fp32(kr[d]);
          p[j] = s * scale;
          max = std::max(max, p[j]);
        }
        double sum = 0;
        for (int32_t j = 0; j < n; ++j) {
          p[j] = canon::exp_f32(p[j] - max);
          sum += p[j];
        }
        const float inv = static_cast<float>(1.0 / sum);
        float* o = out + (t * n_head + h) * head_dim;
        for (int32_t d = 0; d < head_dim; ++d) o[d] = 0.0f;
        for (int32_t j = 0; j < n; ++j) {
          const float pr = fp16_to_fp32(fp32_to_fp16(p[j] * inv));
          const uint16_t* vr = k0 + kv.v_offset + static_cast<int64_t>(j) * kv.kv_dim + off;
          for (int32_t d = 0; d < head_dim; ++d) o[d] += pr * fp16_to_fp32(vr[d]);
        }
      }
    }
  });
  return {};
}

size_t attention_scratch_bytes(int64_t, int32_t, int32_t) {
  return 0;
}

}  // namespace hearth::engine::cuda
