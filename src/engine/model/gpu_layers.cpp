#include "engine/model/gpu_layers.h"

#include "hearth/engine/device_spec.h"

#include <cmath>
#include <cstring>

#if !HEARTH_HAVE_CUDA

namespace hearth::engine {

struct GpuLayers::State {};

Result<std::unique_ptr<GpuLayers>> GpuLayers::create(const Hparams&, const ModelWeights&,
                                                     const EngineOptions& opts,
                                                     const GpuLayersConfig&) {
  return Unsupported("device \"" + opts.device +
                     "\": this build of hearth has no CUDA backend (build with HEARTH_CUDA=1; "
                     "docs/gpu.md)");
}
GpuLayers::GpuLayers(std::unique_ptr<State> st) : st_(std::move(st)) {}
GpuLayers::~GpuLayers() = default;
int32_t GpuLayers::n_layers() const {
  return 0;
}
bool GpuLayers::has_output() const {
  return false;
}
std::string GpuLayers::description() const {
  return "cpu";
}
std::string GpuLayers::tag() const {
  return "";
}
uint64_t GpuLayers::device_bytes() const {
  return 0;
}
size_t GpuLayers::bytes_per_position() const {
  return 0;
}
Status GpuLayers::run(std::span<const BatchToken>, const float*, const float*, float*, float*) {
  return Unsupported("no CUDA backend");
}
Status GpuLayers::enqueue(int64_t, int64_t, bool) {
  return Unsupported("no CUDA backend");
}
Status GpuLayers::pack(int32_t, int32_t, uint8_t*) const {
  return Unsupported("no CUDA backend");
}
Status GpuLayers::unpack(int32_t, const uint8_t*, int32_t) {
  return Unsupported("no CUDA backend");
}
Status GpuLayers::copy(int32_t, int32_t, int32_t) {
  return Unsupported("no CUDA backend");
}
Result<std::span<uint8_t>> GpuLayers::import_staging(int32_t) {
  return Unsupported("no CUDA backend");
}
Status GpuLayers::import_commit(int32_t, int32_t) {
  return Unsupported("no CUDA backend");
}

}  // namespace hearth::engine

#else  // HEARTH_HAVE_CUDA

#include <algorithm>
#include <cstdlib>
#include <map>
#include <tuple>
#include <vector>

#include "engine/cuda/cuda_api.h"
#include "engine/cuda/layer_ops.h"
#include "engine/cuda/matmul.h"

namespace hearth::engine {
namespace {

namespace cu = ::hearth::engine::cuda;

Status cuda_status(const cu::Error& e) {
  if (e.empty()) return OkStatus();
  return Internal("cuda: " + e);
}

#define HEARTH_CUDA_TRY(expr)                                     \
  do {                                                            \
    if (cu::Error hearth_cuda_e = (expr); !hearth_cuda_e.empty()) \
      return cuda_status(hearth_cuda_e);                          \
  } while (0)

// A float vector (norm weight, bias) on the device.
struct DeviceVector {
  cu::DeviceBuffer buf;
  const float* data() const { return buf.as<const float>(); }
};

struct GpuLayer {
  DeviceVector attn_norm, ffn_norm, bq, bk, bv, q_norm, k_norm;
  cu::DeviceMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
};

}  // namespace

struct GpuLayers::State {
  GpuLayersConfig cfg;
  Hparams hp;
  cu::DeviceProps props;
  cu::Stream stream;
  std::vector<GpuLayer> layers;
  DeviceVector output_norm;
  cu::DeviceMatrix output;
  // KV: [seq][layer][K|V][n_ctx][kv_dim] F16.
  cu::DeviceBuffer kv;
  size_t row_bytes = 0;  // kv_dim F16 values
  // Activations for n_batch tokens.
  cu::DeviceBuffer x, xn, q, k, v, att, proj, gate, up, q16, logits, gathered;
  cu::DeviceBuffer seq, pos, rope, out_rows;
  cu::DeviceBuffer mm_scratch, attn_scratch;
  // Pinned staging: the chunk's inputs (x, rope, seq, pos, out_rows) and outputs.
  cu::PinnedBuffer in_host, out_host;
  cu::PinnedBuffer import_host;  // kv_import staging, grown on demand
  uint64_t device_bytes = 0;
  // Captured layer passes of small chunks (decode), by (tokens, logits rows, head on the
  // GPU): replaying one costs one launch instead of a few hundred. Off with
  // HEARTH_CUDA_GRAPHS=0, or after a capture fails.
  std::map<std::tuple<int64_t, int64_t, bool>, std::unique_ptr<cu::Graph>> graphs;
  bool use_graphs = true;

  cu::KvLayer kv_layer(int32_t l) const {
    cu::KvLayer v;
    const int64_t per_kind = static_cast<int64_t>(cfg.n_ctx) * hp.kv_dim();
    v.k = kv.as<uint16_t>() + static_cast<int64_t>(l) * 2 * per_kind;
    v.seq_stride = static_cast<int64_t>(cfg.n_layers) * 2 * per_kind;
    v.v_offset = per_kind;
    v.kv_dim = hp.kv_dim();
    return v;
  }
  // Byte offset of (seq, layer l, kind) slot 0 in kv.
  size_t kv_offset(int32_t seq, int32_t l, int kind) const {
    const size_t per_kind = static_cast<size_t>(cfg.n_ctx) * row_bytes;
    return (static_cast<size_t>(seq) * cfg.n_layers + l) * 2 * per_kind + kind * per_kind;
  }
};

namespace {

Status alloc(cu::DeviceBuffer& b, size_t bytes, uint64_t& total) {
  HEARTH_CUDA_TRY(b.allocate(std::max<size_t>(bytes, 16)));
  total += b.bytes();
  return OkStatus();
}

Status upload_vector(const VectorWeight& v, int64_t n, const cu::Stream& s, DeviceVector& out,
                     uint64_t& total) {
  if (v.data == nullptr) return OkStatus();
  HEARTH_RETURN_IF_ERROR(alloc(out.buf, static_cast<size_t>(n) * sizeof(float), total));
  HEARTH_CUDA_TRY(
      cu::copy_to_device(out.buf.data(), v.data, static_cast<size_t>(n) * sizeof(float), s));
  return cuda_status(s.sync());  // the host vector may be a temporary's
}

Status upload_matrix(const WeightView& w, const std::string& name, const cu::Stream& s,
                     cu::DeviceMatrix& out, uint64_t& total) {
  const auto type = static_cast<int32_t>(w.type);
  if (!cu::matmul_supports(type)) {
    return Unsupported(
        "tensor " + name + ": weight type " + std::string(gguf::tensor_type_name(w.type)) +
        " has no CUDA kernel (the GPU takes Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, "
        "Q6_K, F16, BF16 and F32; keep this layer on the CPU with a smaller "
        "n_gpu_layers)");
  }
  if (w.interleaved) return Internal("tensor " + name + ": interleaved rows cannot be uploaded");
  HEARTH_CUDA_TRY(cu::upload_matrix(type, w.rows, w.cols, w.data, w.row_bytes(), s, &out));
  total += out.data.bytes() + out.aux.bytes();
  return OkStatus();
}

// What the GPU layers implement; the rest is refused by name at load.
Status check_supported(const Hparams& hp, const EngineOptions& opts) {
  auto no = [&](const std::string& what) {
    return Unsupported("device " + opts.device + ": " + hp.arch + "'s " + what +
                       " is not implemented on the GPU yet (run it with device cpu)");
  };
  if (hp.encoder) return no("encoder (bert) layers");
  if (hp.is_moe()) return no("mixture-of-experts FFN");
  if (hp.post_norms) return no("post-attention / post-FFN norms");
  if (hp.gelu) return no("GELU FFN");
  if (hp.attn_softcap > 0 || hp.final_softcap > 0) return no("soft-capping");
  if (hp.n_swa > 0) return no("sliding-window attention");
  if (!hp.causal) return no("non-causal attention");
  if (opts.kv_type != KvType::kF16) {
    return Unsupported(std::string("device ") + opts.device + ": kv_type " +
                       kv_type_name(opts.kv_type) + " is not implemented on the GPU (use f16)");
  }
  return OkStatus();
}

}  // namespace

GpuLayers::GpuLayers(std::unique_ptr<State> st) : st_(std::move(st)) {}
GpuLayers::~GpuLayers() = default;

Result<std::unique_ptr<GpuLayers>> GpuLayers::create(const Hparams& hp, const ModelWeights& w,
                                                     const EngineOptions& opts,
                                                     const GpuLayersConfig& config) {
  HEARTH_RETURN_IF_ERROR(check_supported(hp, opts));
  HEARTH_RETURN_IF_ERROR(
      check_device_available(DeviceSpec{DeviceSpec::Kind::kCuda, config.device_index}));
  auto st = std::make_unique<State>();
  st->cfg = config;
  st->hp = hp;
  HEARTH_CUDA_TRY(cu::set_device(config.device_index));
  HEARTH_CUDA_TRY(cu::device_props(config.device_index, &st->props));
  HEARTH_CUDA_TRY(st->stream.create());
  const cu::Stream& s = st->stream;
  uint64_t& total = st->device_bytes;
  const int64_t e = hp.n_embd;
  st->layers.resize(static_cast<size_t>(config.n_layers));
  for (int32_t l = 0; l < config.n_layers; ++l) {
    const LayerWeights& L = w.layers[static_cast<size_t>(l)];
    GpuLayer& G = st->layers[static_cast<size_t>(l)];
    const std::string p = "blk." + std::to_string(l) + ".";
    HEARTH_RETURN_IF_ERROR(upload_vector(L.attn_norm, e, s, G.attn_norm, total));
    HEARTH_RETURN_IF_ERROR(upload_vector(L.ffn_norm, e, s, G.ffn_norm, total));
    if (hp.has_qkv_bias) {
      HEARTH_RETURN_IF_ERROR(upload_vector(L.bq, hp.q_dim(), s, G.bq, total));
      HEARTH_RETURN_IF_ERROR(upload_vector(L.bk, hp.kv_dim(), s, G.bk, total));
      HEARTH_RETURN_IF_ERROR(upload_vector(L.bv, hp.kv_dim(), s, G.bv, total));
    }
    if (hp.qk_norm) {
      HEARTH_RETURN_IF_ERROR(upload_vector(L.q_norm, hp.head_dim, s, G.q_norm, total));
      HEARTH_RETURN_IF_ERROR(upload_vector(L.k_norm, hp.head_dim, s, G.k_norm, total));
    }
    HEARTH_RETURN_IF_ERROR(upload_matrix(L.wq, p + "attn_q", s, G.wq, total));
    HEARTH_RETURN_IF_ERROR(upload_matrix(L.wk, p + "attn_k", s, G.wk, total));
    HEARTH_RETURN_IF_ERROR(upload_matrix(L.wv, p + "attn_v", s, G.wv, total));
    HEARTH_RETURN_IF_ERROR(upload_matrix(L.wo, p + "attn_output", s, G.wo, total));
    HEARTH_RETURN_IF_ERROR(upload_matrix(L.w_gate, p + "ffn_gate", s, G.w_gate, total));
    HEARTH_RETURN_IF_ERROR(upload_matrix(L.w_up, p + "ffn_up", s, G.w_up, total));
    HEARTH_RETURN_IF_ERROR(upload_matrix(L.w_down, p + "ffn_down", s, G.w_down, total));
  }
  if (config.output) {
    HEARTH_RETURN_IF_ERROR(upload_vector(w.output_norm, e, s, st->output_norm, total));
    HEARTH_RETURN_IF_ERROR(upload_matrix(w.output, "output", s, st->output, total));
  }
  // KV, zero-filled (a position is always written before it is read).
  st->row_bytes = static_cast<size_t>(hp.kv_dim()) * sizeof(uint16_t);
  const size_t kv_bytes = static_cast<size_t>(config.n_kv_seq) * config.n_layers * 2 *
                          static_cast<size_t>(config.n_ctx) * st->row_bytes;
  HEARTH_RETURN_IF_ERROR(alloc(st->kv, kv_bytes, total));
  HEARTH_CUDA_TRY(cu::fill_device(st->kv.data(), 0, st->kv.bytes(), s));
  // Activations and scratch for n_batch tokens.
  const size_t B = static_cast<size_t>(config.n_batch);
  const size_t f = sizeof(float);
  const size_t ff = static_cast<size_t>(hp.n_ff);
  HEARTH_RETURN_IF_ERROR(alloc(st->x, B * e * f, total));
  HEARTH_RETURN_IF_ERROR(alloc(st->xn, B * e * f, total));
  HEARTH_RETURN_IF_ERROR(alloc(st->q, B * hp.q_dim() * f, total));
  HEARTH_RETURN_IF_ERROR(alloc(st->k, B * hp.kv_dim() * f, total));
  HEARTH_RETURN_IF_ERROR(alloc(st->v, B * hp.kv_dim() * f, total));
  HEARTH_RETURN_IF_ERROR(alloc(st->att, B * hp.q_dim() * f, total));
  HEARTH_RETURN_IF_ERROR(alloc(st->proj, B * e * f, total));
  HEARTH_RETURN_IF_ERROR(alloc(st->gate, B * ff * f, total));
  HEARTH_RETURN_IF_ERROR(alloc(st->up, B * ff * f, total));
  HEARTH_RETURN_IF_ERROR(alloc(st->q16, B * hp.q_dim() * sizeof(uint16_t), total));
  HEARTH_RETURN_IF_ERROR(alloc(st->seq, B * sizeof(int32_t), total));
  HEARTH_RETURN_IF_ERROR(alloc(st->pos, B * sizeof(int32_t), total));
  HEARTH_RETURN_IF_ERROR(alloc(st->out_rows, B * sizeof(int32_t), total));
  HEARTH_RETURN_IF_ERROR(alloc(st->rope, B * hp.n_rot * f, total));
  if (config.output) {
    HEARTH_RETURN_IF_ERROR(alloc(st->gathered, B * e * f, total));
    HEARTH_RETURN_IF_ERROR(alloc(st->logits, B * static_cast<size_t>(hp.n_vocab) * f, total));
  }
  size_t mm = 0;
  auto need = [&](const cu::DeviceMatrix& m) {
    if (m.rows > 0) mm = std::max(mm, cu::matmul_scratch_bytes(config.n_batch, m.cols, m.rows));
  };
  for (const GpuLayer& G : st->layers) {
    for (const cu::DeviceMatrix* m : {&G.wq, &G.wk, &G.wv, &G.wo, &G.w_gate, &G.w_up, &G.w_down})
      need(*m);
  }
  need(st->output);
  HEARTH_RETURN_IF_ERROR(alloc(st->mm_scratch, mm, total));
  HEARTH_RETURN_IF_ERROR(alloc(st->attn_scratch,
                               cu::attention_scratch_bytes(config.n_batch, hp.n_head, config.n_ctx),
                               total));
  // Pinned staging of a chunk's inputs: x, rope, seq, pos, out_rows; outputs: x or logits.
  const size_t in_bytes = B * (e + hp.n_rot) * f + 3 * B * sizeof(int32_t);
  HEARTH_CUDA_TRY(st->in_host.allocate(in_bytes));
  const size_t out_floats =
      std::max(B * e, config.output ? B * static_cast<size_t>(hp.n_vocab) : 0);
  HEARTH_CUDA_TRY(st->out_host.allocate(out_floats * f));
  HEARTH_CUDA_TRY(s.sync());
  if (const char* g = std::getenv("HEARTH_CUDA_GRAPHS"); g != nullptr && std::string(g) == "0")
    st->use_graphs = false;
  return std::unique_ptr<GpuLayers>(new GpuLayers(std::move(st)));
}

int32_t GpuLayers::n_layers() const {
  return st_->cfg.n_layers;
}
bool GpuLayers::has_output() const {
  return st_->cfg.output;
}
uint64_t GpuLayers::device_bytes() const {
  return st_->device_bytes;
}
size_t GpuLayers::bytes_per_position() const {
  return static_cast<size_t>(st_->cfg.n_layers) * 2 * st_->row_bytes;
}

std::string GpuLayers::description() const {
  return "cuda:" + std::to_string(st_->cfg.device_index) + " " + st_->props.name + ", sm_" +
         std::to_string(st_->props.cc_major) + std::to_string(st_->props.cc_minor);
}

std::string GpuLayers::tag() const {
  // The kernels' numerics version, the architecture they ran on, and the split: a row
  // computed with 10 GPU layers has other bits than one with 22.
  return ";gpu=cuda-1:sm_" + std::to_string(st_->props.cc_major) +
         std::to_string(st_->props.cc_minor) + ":layers=" + std::to_string(st_->cfg.n_layers) +
         (st_->cfg.output ? "+out" : "");
}

// Chunks of up to this many tokens replay a captured graph (decode steps of a few streams).
constexpr int64_t kGraphTokens = 32;

Status GpuLayers::run(std::span<const BatchToken> chunk, const float* x_in, const float* rope,
                      float* x_out, float* logits) {
  State& S = *st_;
  const Hparams& hp = S.hp;
  const cu::Stream& s = S.stream;
  const int64_t T = static_cast<int64_t>(chunk.size());
  const int32_t e = hp.n_embd;
  if (T < 1 || T > S.cfg.n_batch) {
    return Internal("GpuLayers::run: chunk of " + std::to_string(T) + " tokens (n_batch " +
                    std::to_string(S.cfg.n_batch) + ")");
  }
  if (x_out == nullptr && !S.cfg.output) return Internal("GpuLayers::run: no output head");
  // Stage the inputs in pinned memory, then one copy each.
  uint8_t* h = S.in_host.as<uint8_t>();
  const size_t x_bytes = static_cast<size_t>(T) * e * sizeof(float);
  const size_t rope_bytes = static_cast<size_t>(T) * hp.n_rot * sizeof(float);
  const size_t idx_bytes = static_cast<size_t>(T) * sizeof(int32_t);
  std::memcpy(h, x_in, x_bytes);
  std::memcpy(h + x_bytes, rope, rope_bytes);
  auto* seq_h = reinterpret_cast<int32_t*>(h + x_bytes + rope_bytes);
  auto* pos_h = seq_h + T;
  auto* rows_h = pos_h + T;
  int64_t n_out = 0;
  for (int64_t t = 0; t < T; ++t) {
    seq_h[t] = chunk[static_cast<size_t>(t)].seq;
    pos_h[t] = chunk[static_cast<size_t>(t)].pos;
    if (chunk[static_cast<size_t>(t)].logits) rows_h[n_out++] = static_cast<int32_t>(t);
  }
  HEARTH_CUDA_TRY(cu::copy_to_device(S.x.data(), h, x_bytes, s));
  HEARTH_CUDA_TRY(cu::copy_to_device(S.rope.data(), h + x_bytes, rope_bytes, s));
  HEARTH_CUDA_TRY(cu::copy_to_device(S.seq.data(), seq_h, idx_bytes, s));
  HEARTH_CUDA_TRY(cu::copy_to_device(S.pos.data(), pos_h, idx_bytes, s));
  HEARTH_CUDA_TRY(cu::copy_to_device(S.out_rows.data(), rows_h, idx_bytes, s));

  const bool head = x_out == nullptr;
  if (head && n_out == 0) {
    HEARTH_RETURN_IF_ERROR(enqueue(T, 0, false));
    return cuda_status(s.sync());
  }
  const int64_t rows_out = head ? n_out : 0;
  if (S.use_graphs && T <= kGraphTokens) {
    std::unique_ptr<cu::Graph>& g = S.graphs[{T, rows_out, head}];
    if (!g) {
      g = std::make_unique<cu::Graph>();
      if (cu::Error err = g->begin_capture(s); !err.empty()) {
        S.use_graphs = false;
      } else {
        // A launcher that cannot be captured (it waits for the device, say) fails the
        // capture: the launches then run directly from now on, and any real error
        // shows there.
        const Status queued = enqueue(T, rows_out, head);
        const cu::Error ended = g->end_capture(s);
        if (!queued.ok() || !ended.empty()) {
          S.use_graphs = false;
          (void)cu::launch_error("capture");  // clears the capture's error
        }
      }
    }
    if (S.use_graphs && g->ready()) {
      HEARTH_CUDA_TRY(g->launch(s));
    } else {
      HEARTH_RETURN_IF_ERROR(enqueue(T, rows_out, head));
    }
  } else {
    HEARTH_RETURN_IF_ERROR(enqueue(T, rows_out, head));
  }
  if (!head) {
    HEARTH_CUDA_TRY(cu::copy_to_host(S.out_host.data(), S.x.data(), x_bytes, s));
    HEARTH_CUDA_TRY(s.sync());
    std::memcpy(x_out, S.out_host.data(), x_bytes);
    return OkStatus();
  }
  const size_t bytes = static_cast<size_t>(n_out) * hp.n_vocab * sizeof(float);
  HEARTH_CUDA_TRY(cu::copy_to_host(S.out_host.data(), S.logits.data(), bytes, s));
  HEARTH_CUDA_TRY(s.sync());
  std::memcpy(logits, S.out_host.data(), bytes);
  return OkStatus();
}

// The launches of one chunk whose inputs are on the device: every GPU layer, then (head)
// the final norm and output projection of the n_out rows picked by out_rows. Nothing here
// waits for the device, so it can be captured into a graph.
Status GpuLayers::enqueue(int64_t T, int64_t n_out, bool head) {
  State& S = *st_;
  const Hparams& hp = S.hp;
  const cu::Stream& s = S.stream;
  const int32_t e = hp.n_embd, qd = hp.q_dim(), kvd = hp.kv_dim(), hd = hp.head_dim;
  float* x = S.x.as<float>();
  float* xn = S.xn.as<float>();
  float* q = S.q.as<float>();
  float* k = S.k.as<float>();
  float* v = S.v.as<float>();
  float* att = S.att.as<float>();
  float* proj = S.proj.as<float>();
  float* gate = S.gate.as<float>();
  float* up = S.up.as<float>();
  const int32_t* seq = S.seq.as<const int32_t>();
  const int32_t* pos = S.pos.as<const int32_t>();
  void* mm = S.mm_scratch.data();
  const size_t mm_bytes = S.mm_scratch.bytes();
  auto matmul = [&](const cu::DeviceMatrix& w, const float* in, float* out, int64_t n) {
    return cu::matmul(w, in, n, out, mm, mm_bytes, s);
  };
  const float attn_scale = hp.q_scale > 0 ? 1.0f : 1.0f / std::sqrt(static_cast<float>(hd));
  const float q_scale = hp.q_scale > 0 ? hp.q_scale : 1.0f;
  for (int32_t l = 0; l < S.cfg.n_layers; ++l) {
    const GpuLayer& G = S.layers[static_cast<size_t>(l)];
    HEARTH_CUDA_TRY(cu::rms_norm(x, G.attn_norm.data(), e, hp.rms_eps, T, xn, s));
    HEARTH_CUDA_TRY(matmul(G.wq, xn, q, T));
    HEARTH_CUDA_TRY(matmul(G.wk, xn, k, T));
    HEARTH_CUDA_TRY(matmul(G.wv, xn, v, T));
    if (hp.has_qkv_bias) {
      HEARTH_CUDA_TRY(cu::add_bias(q, G.bq.data(), qd, T, s));
      HEARTH_CUDA_TRY(cu::add_bias(k, G.bk.data(), kvd, T, s));
      HEARTH_CUDA_TRY(cu::add_bias(v, G.bv.data(), kvd, T, s));
    }
    if (hp.qk_norm) {
      HEARTH_CUDA_TRY(cu::head_rms_norm(q, G.q_norm.data(), hp.n_head, hd, hp.rms_eps, T, s));
      HEARTH_CUDA_TRY(cu::head_rms_norm(k, G.k_norm.data(), hp.n_head_kv, hd, hp.rms_eps, T, s));
    }
    HEARTH_CUDA_TRY(
        cu::rope(q, hp.n_head, hd, hp.n_rot, S.rope.as<const float>(), hp.rope_neox, T, s));
    HEARTH_CUDA_TRY(
        cu::rope(k, hp.n_head_kv, hd, hp.n_rot, S.rope.as<const float>(), hp.rope_neox, T, s));
    const cu::KvLayer kv = S.kv_layer(l);
    HEARTH_CUDA_TRY(
        cu::store_kv_and_round_q(q, k, v, seq, pos, T, qd, q_scale, kv, S.q16.as<uint16_t>(), s));
    HEARTH_CUDA_TRY(cu::attention(S.q16.as<const uint16_t>(), kv, seq, pos, T, hp.n_head,
                                  hp.n_head_kv, hd, attn_scale, S.cfg.n_ctx, att,
                                  S.attn_scratch.data(), S.attn_scratch.bytes(), s));
    HEARTH_CUDA_TRY(matmul(G.wo, att, proj, T));
    HEARTH_CUDA_TRY(cu::add_rms_norm(x, proj, G.ffn_norm.data(), e, hp.rms_eps, T, xn, s));
    HEARTH_CUDA_TRY(matmul(G.w_gate, xn, gate, T));
    HEARTH_CUDA_TRY(matmul(G.w_up, xn, up, T));
    HEARTH_CUDA_TRY(cu::silu_mul(gate, up, T * hp.n_ff, s));
    HEARTH_CUDA_TRY(matmul(G.w_down, gate, proj, T));
    HEARTH_CUDA_TRY(cu::add(x, proj, T * e, s));
  }
  if (head && n_out > 0) {
    float* g = S.gathered.as<float>();
    HEARTH_CUDA_TRY(cu::gather_rows(x, S.out_rows.as<const int32_t>(), n_out, e, g, s));
    HEARTH_CUDA_TRY(cu::rms_norm(g, S.output_norm.data(), e, hp.rms_eps, n_out, g, s));
    HEARTH_CUDA_TRY(matmul(S.output, g, S.logits.as<float>(), n_out));
  }
  return OkStatus();
}

Status GpuLayers::pack(int32_t seq, int32_t n, uint8_t* packed) const {
  const State& S = *st_;
  if (n == 0 || S.cfg.n_layers == 0) return OkStatus();
  // Rows [0, n) of each (layer, kind) run: 2 * n_layers runs, n_ctx rows apart on the
  // device, n rows apart in the packed bytes.
  const size_t run = static_cast<size_t>(n) * S.row_bytes;
  HEARTH_CUDA_TRY(cu::copy_2d(packed, run, S.kv.as<uint8_t>() + S.kv_offset(seq, 0, 0),
                              static_cast<size_t>(S.cfg.n_ctx) * S.row_bytes, run,
                              static_cast<size_t>(S.cfg.n_layers) * 2, S.stream));
  return cuda_status(S.stream.sync());
}

Status GpuLayers::unpack(int32_t seq, const uint8_t* packed, int32_t n) {
  State& S = *st_;
  if (n == 0 || S.cfg.n_layers == 0) return OkStatus();
  const size_t run = static_cast<size_t>(n) * S.row_bytes;
  HEARTH_CUDA_TRY(cu::copy_2d(S.kv.as<uint8_t>() + S.kv_offset(seq, 0, 0),
                              static_cast<size_t>(S.cfg.n_ctx) * S.row_bytes, packed, run, run,
                              static_cast<size_t>(S.cfg.n_layers) * 2, S.stream));
  return cuda_status(S.stream.sync());
}

Status GpuLayers::copy(int32_t src, int32_t dst, int32_t n) {
  State& S = *st_;
  if (n == 0 || S.cfg.n_layers == 0) return OkStatus();
  const size_t pitch = static_cast<size_t>(S.cfg.n_ctx) * S.row_bytes;
  HEARTH_CUDA_TRY(cu::copy_2d(S.kv.as<uint8_t>() + S.kv_offset(dst, 0, 0), pitch,
                              S.kv.as<uint8_t>() + S.kv_offset(src, 0, 0), pitch,
                              static_cast<size_t>(n) * S.row_bytes,
                              static_cast<size_t>(S.cfg.n_layers) * 2, S.stream));
  return cuda_status(S.stream.sync());
}

Result<std::span<uint8_t>> GpuLayers::import_staging(int32_t n) {
  State& S = *st_;
  const size_t bytes = static_cast<size_t>(n) * S.row_bytes * 2 * S.cfg.n_layers;
  if (S.import_host.bytes() < bytes) {
    // Grown to the whole context at once, so a session of restores allocates once.
    const size_t full = static_cast<size_t>(S.cfg.n_ctx) * S.row_bytes * 2 * S.cfg.n_layers;
    HEARTH_CUDA_TRY(S.import_host.allocate(std::max(bytes, full)));
  }
  return std::span<uint8_t>(S.import_host.as<uint8_t>(), bytes);
}

Status GpuLayers::import_commit(int32_t seq, int32_t n) {
  return unpack(seq, st_->import_host.as<const uint8_t>(), n);
}

}  // namespace hearth::engine

#endif  // HEARTH_HAVE_CUDA
