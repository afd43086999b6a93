#include "engine/model/attention.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "engine/kernels/canonical.h"
#include "engine/kernels/kernel_set.h"
#include "engine/kernels/kv_blocks.h"
#include "hearth/engine/fp16.h"

namespace hearth::engine {
namespace {

size_t round_up(size_t n, size_t m) {
  return (n + m - 1) / m * m;
}

// The portable softmax: the definition in attention.h, plainly. The kernel tables'
// softmax_f16 (engine/kernels/x86_model_kernels.inc) gives its bits on vectors.
float scale_and_max(float* scores, int32_t n, float scale) {
  float max = -INFINITY;
  for (int32_t p = 0; p < n; ++p) {
    const float s = scores[p] * scale;
    scores[p] = s;
    if (s > max) max = s;
  }
  return max;
}

void softmax_f16_portable(float* scores, int32_t n, float scale) {
  const float max = scale_and_max(scores, n, scale);
  canon::SumLanes16 sum;
  for (int32_t p = 0; p < n; ++p) {
    const float e = canon::exp_f32(scores[p] - max);
    scores[p] = e;
    sum.v[p % 16] += static_cast<double>(e);
  }
  const float inv = static_cast<float>(1.0 / sum.reduce());
  for (int32_t p = 0; p < n; ++p) scores[p] = fp16_to_fp32(fp32_to_fp16(scores[p] * inv));
}

AttendTask make_task(const KvStore& kv, int32_t seq, int32_t layer, int32_t kv_head, int32_t group,
                     std::span<const TokenQueries> tokens, int32_t head_dim, float scale,
                     float* scratch, AttendMask mask) {
  // A ring layer's slots wrap (KvStore); the tiles and P.V follow positions through them.
  const int32_t ring = kv.is_ring(layer) ? kv.ring_capacity() : 0;
  if (kv.type() != KvType::kF16) {
    const size_t qoff = static_cast<size_t>(kv_head) * static_cast<size_t>(head_dim / kKvBlock) *
                        canon::kv_block_bytes(kv.type());
    AttendTask t{nullptr,      nullptr,       0,
                 group,        tokens.data(), static_cast<int32_t>(tokens.size()),
                 head_dim,     scale,         scratch,
                 mask.softcap, mask.window};
    t.kv_type = kv.type();
    t.kq0 = kv.k_slot0(seq, layer) + qoff;
    t.vq0 = kv.v_slot0(seq, layer) + qoff;
    t.q_stride = kv.row_bytes();
    t.ring = ring;
    return t;
  }
  const size_t off = static_cast<size_t>(kv_head) * static_cast<size_t>(head_dim);
  // K in tiles: this head's columns start at its first element's lane 0 of tile 0.
  AttendTask t{reinterpret_cast<const uint16_t*>(kv.k_slot0(seq, layer)) + off * canon::kKTile,
               kv.v_head(seq, layer, static_cast<int32_t>(off)),
               static_cast<size_t>(kv.kv_dim()),
               group,
               tokens.data(),
               static_cast<int32_t>(tokens.size()),
               head_dim,
               scale,
               scratch,
               mask.softcap,
               mask.window};
  t.ring = ring;
  t.v_stride = static_cast<size_t>(kv.v_head_dim());
  return t;
}

// attend_reference on quantized KV: the order in attention.h, plainly.
void attend_reference_quantized(const KvStore& kv, int32_t seq, int32_t layer, int32_t kv_head,
                                int32_t pos, const float* q, int32_t head_dim, float scale,
                                float* scores, float* out, AttendMask mask) {
  const KvType type = kv.type();
  const size_t bb = canon::kv_block_bytes(type);
  const int32_t nb = head_dim / kKvBlock;
  const size_t off = static_cast<size_t>(kv_head) * static_cast<size_t>(nb) * bb;
  const int32_t ws = canon::window_start(pos, mask.window);
  const int32_t n = pos + 1 - ws;
  int8_t ints[kKvBlock];
  for (int32_t i = 0; i < n; ++i) {
    const uint8_t* k = kv.k_bytes(seq, layer, ws + i) + off;
    float s = 0.0f;
    for (int32_t b = 0; b < nb; ++b, k += bb) {
      canon::kv_block_ints(type, k, ints);
      const float* qb = q + b * kKvBlock;
      float inner = 0.0f;
      for (int32_t d = 0; d < kKvBlock; ++d) inner += qb[d] * static_cast<float>(ints[d]);
      s = std::fma(canon::kv_block_scale(k), inner, s);
    }
    scores[i] = s;
  }
  if (mask.softcap > 0.0f) canon::softcap(scores, n, mask.softcap);
  softmax_f16(scores, n, scale);
  for (int32_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  for (int32_t i = 0; i < n; ++i) {
    const uint8_t* v = kv.v_bytes(seq, layer, ws + i) + off;
    const float pr = scores[i];
    for (int32_t b = 0; b < nb; ++b, v += bb) {
      canon::kv_block_ints(type, v, ints);
      const float w = pr * canon::kv_block_scale(v);
      float* ob = out + b * kKvBlock;
      for (int32_t d = 0; d < kKvBlock; ++d)
        ob[d] = std::fma(w, static_cast<float>(ints[d]), ob[d]);
    }
  }
}

}  // namespace

void softmax_f16(float* scores, int32_t n, float scale) {
  if (const auto f = active_kernels().softmax_f16; f != nullptr) {
    f(scores, n, scale);
    return;
  }
  softmax_f16_portable(scores, n, scale);
}
void attend_reference(const KvStore& kv, int32_t seq, int32_t layer, int32_t kv_head, int32_t pos,
                      const float* q, int32_t head_dim, float scale, float* scores, float* out,
                      AttendMask mask) {
  if (kv.type() != KvType::kF16) {
    attend_reference_quantized(kv, seq, layer, kv_head, pos, q, head_dim, scale, scores, out, mask);
    return;
  }
  const int32_t ws = canon::window_start(pos, mask.window);
  const int32_t n = pos + 1 - ws;  // positions ws .. pos; scores[i] is position ws + i
  const size_t off = static_cast<size_t>(kv_head) * static_cast<size_t>(head_dim);
  // Products of two F16 values are exact in f32, so `s += a * b` rounds once per step
  // whether or not the compiler contracts it into an FMA.
  const auto* k_tiles = reinterpret_cast<const uint16_t*>(kv.k_slot0(seq, layer));
  for (int32_t i = 0; i < n; ++i) {
    const uint16_t* k = k_tiles + canon::k_tile_offset(kv.slot(layer, ws + i),
                                                       static_cast<int32_t>(off), kv.kv_dim());
    float s = 0.0f;
    for (int32_t d = 0; d < head_dim; ++d) s += q[d] * fp16_to_fp32(k[d * canon::kKTile]);
    scores[i] = s;
  }
  if (mask.softcap > 0.0f) canon::softcap(scores, n, mask.softcap);
  softmax_f16(scores, n, scale);
  for (int32_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  for (int32_t i = 0; i < n; ++i) {
    const uint16_t* v = kv.v_cols(seq, layer, ws + i, static_cast<int32_t>(off));
    const float pr = scores[i];
    for (int32_t d = 0; d < head_dim; ++d) out[d] += pr * fp16_to_fp32(v[d]);
  }
}

size_t attend_tokens_scratch_floats(int32_t n_tokens, int32_t group, int32_t n_ctx,
                                    int32_t head_dim) {
  const size_t scores = static_cast<size_t>(std::max(1, n_tokens)) * static_cast<size_t>(group) *
                        round_up(static_cast<size_t>(std::max(1, n_ctx)), kAttendMaxLanes);
  return kAttendTileFloats + attend_queries_floats(std::max(1, n_tokens), group, head_dim) +
         std::max(scores, static_cast<size_t>(head_dim));
}

bool attend_tokens_with(const KernelSet& kernels, int32_t lanes, const KvStore& kv, int32_t seq,
                        int32_t layer, int32_t kv_head, int32_t group,
                        std::span<const TokenQueries> tokens, int32_t head_dim, float scale,
                        float* scratch, AttendMask mask) {
  if (tokens.empty() || kernels.attend == nullptr) return false;
  return kernels.attend(
      lanes, make_task(kv, seq, layer, kv_head, group, tokens, head_dim, scale, scratch, mask));
}

void attend_tokens(const KvStore& kv, int32_t seq, int32_t layer, int32_t kv_head, int32_t group,
                   std::span<const TokenQueries> tokens, int32_t head_dim, float scale,
                   float* scratch, AttendMask mask) {
  if (tokens.empty()) return;
  for (size_t i = 1; i < tokens.size(); ++i) assert(tokens[i - 1].pos <= tokens[i].pos);
  // The active table's widest tiling for head_dim (HEARTH_KERNELS=avx2 on an AVX-512
  // machine thus measures 8 lanes, the yardstick's; scalar takes the loop below).
  // Same bits either way.
  if (attend_tokens_with(active_kernels(), 0, kv, seq, layer, kv_head, group, tokens, head_dim,
                         scale, scratch, mask)) {
    return;
  }
  float* scores = scratch + kAttendTileFloats;
  for (const TokenQueries& t : tokens) {
    for (int32_t h = 0; h < group; ++h) {
      const size_t at = static_cast<size_t>(h) * static_cast<size_t>(head_dim);
      attend_reference(kv, seq, layer, kv_head, t.pos, t.q + at, head_dim, scale, scores,
                       t.out + at, mask);
    }
  }
}

bool attend_split_tasks(const KvStore& kv, int32_t seq, int32_t layer, int32_t n_kv_heads,
                        int32_t group, const TokenQueries* per_head, int32_t head_dim, float scale,
                        float* shared, AttendTask* tasks, AttendMask mask) {
  const KernelSet& kernels = active_kernels();
  if (kernels.attend_scores == nullptr || n_kv_heads <= 0) return false;
  const size_t each = attend_tokens_scratch_floats(1, group, kv.n_ctx(), head_dim);
  for (int32_t h = 0; h < n_kv_heads; ++h) {
    tasks[h] = make_task(kv, seq, layer, h, group, {per_head + h, 1}, head_dim, scale,
                         shared + static_cast<size_t>(h) * each, mask);
  }
  // An empty range asks the table whether it splits these tasks, doing nothing.
  float probe[1];
  return kernels.attend_scores(tasks, n_kv_heads, 0, 0, probe);
}

void attend_split_scores(const AttendTask* tasks, int32_t n_kv_heads, int32_t p0, int32_t p1,
                         float* scratch) {
  active_kernels().attend_scores(tasks, n_kv_heads, p0, p1, scratch);
}

void attend_split_finish(const AttendTask& task) {
  active_kernels().attend_finish(task);
}

int64_t attend_split_tiles(int32_t pos) {
  return (static_cast<int64_t>(pos) + kAttendMaxLanes) / kAttendMaxLanes;  // ceil((pos + 1) / W)
}

PositionRange attend_split_part(int64_t tiles, int64_t parts, int64_t part) {
  return {static_cast<int32_t>(tiles * part / parts * kAttendMaxLanes),
          static_cast<int32_t>(tiles * (part + 1) / parts * kAttendMaxLanes)};
}

}  // namespace hearth::engine
