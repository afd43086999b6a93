// Engine lifecycle, sequence bookkeeping and KV transfer. The forward pass is in
// forward.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "engine/model/engine_impl.h"
#include "hearth/engine/context.h"
#include "hearth/engine/device_spec.h"
#include "hearth/log.h"
#if __has_include("hearth/engine/tokenizer.h")
#include "hearth/engine/tokenizer.h"
#define HEARTH_ENGINE_HAS_TOKENIZER 1
#else
#define HEARTH_ENGINE_HAS_TOKENIZER 0
#endif

namespace hearth {

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

namespace {

// The sliding-window layers that keep only a ring (none with swa_full): the window, the
// slack (a forward chunk appends at most n_batch positions to a sequence) and which.
// first_layer: the host store's layer 0 (the layers before it are on a GPU).
engine::KvRing kv_ring(const engine::Hparams& hp, const EngineOptions& o, int32_t first_layer = 0) {
  engine::KvRing ring;
  if (hp.n_swa <= 0 || o.swa_full) return ring;
  ring.window = hp.n_swa;
  ring.slack = o.n_batch;
  for (int32_t l = first_layer; l < hp.n_layer; ++l) ring.layers.push_back(hp.layer_slides(l));
  return ring;
}

// The context rule's view of the KvStore layout: K and V rows of the layers that keep
// every position, and of the ring layers.
ContextRequest kv_request(const engine::Hparams& hp, const EngineOptions& o, int32_t n_seq) {
  const engine::KvRing ring = kv_ring(hp, o);
  const uint64_t row = 2 * kv_row_bytes(o.kv_type, hp.kv_dim());
  const auto n_ring =
      static_cast<uint64_t>(std::count(ring.layers.begin(), ring.layers.end(), true));
  ContextRequest r;
  r.n_ctx_train = hp.n_ctx_train;
  r.requested = o.n_ctx;
  r.bytes_per_position = row * (static_cast<uint64_t>(hp.n_layer) - n_ring);
  r.ring_bytes_per_position = row * n_ring;
  r.ring_positions =
      n_ring > 0 ? engine::KvStore::ring_capacity_for(ring.window, ring.slack, INT32_MAX) : 0;
  r.n_seq = n_seq;
  r.budget_bytes = o.kv_budget_bytes;
  return r;
}

ModelInfo make_info(const engine::Hparams& hp, const engine::ModelWeights& w,
                    const std::string& path, int32_t n_ctx, int32_t n_seq_max) {
  ModelInfo mi;
  mi.arch = hp.arch;
  mi.name = hp.name.empty() ? std::filesystem::path(path).stem().string() : hp.name;
  mi.path = path;
  mi.n_vocab = hp.n_vocab;
  mi.n_ctx_train = hp.n_ctx_train;
  mi.n_ctx = n_ctx;
  mi.n_seq_max = n_seq_max;
  mi.n_embd = hp.n_embd;
  mi.n_layer = hp.n_layer;
  mi.n_head = hp.n_head;
  mi.n_head_kv = hp.n_head_kv;
  mi.head_dim = hp.head_dim;
  mi.n_rot = hp.n_rot;
  mi.n_ff = hp.n_ff;
  mi.rope_base = hp.rope_base;
  mi.rope_scaling_type = hp.rope_scaling_type;
  mi.rope_scaling_factor = hp.rope_scaling_factor;
  mi.rms_eps = hp.rms_eps;
  mi.rope_neox = hp.rope_neox;
  mi.n_expert = hp.n_expert;
  mi.n_expert_used = hp.n_expert_used;
  mi.n_swa = hp.n_swa;
  mi.tied_embeddings = w.tied;
  mi.file_type = hp.file_type;
  // Without general.file_type the dominant tensor type names the file (a quantized file
  // must not be taken for F32 and held to the float bounds).
  if (hp.has_file_type) mi.quant_name = engine::file_type_name(hp.file_type);
  if (mi.quant_name.empty()) {
    mi.quant_name = gguf::tensor_type_name(w.dominant_type);
    std::transform(mi.quant_name.begin(), mi.quant_name.end(), mi.quant_name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  }
  mi.n_params = w.n_params;
  mi.weight_bytes = w.n_bytes;
  mi.token_embd_bytes =
      gguf::row_bytes(w.token_embd.type, static_cast<uint64_t>(w.token_embd.cols)) *
      static_cast<uint64_t>(w.token_embd.rows);
  mi.bits_per_weight = w.n_params ? static_cast<double>(w.n_bytes) * 8.0 / w.n_params : 0.0;
  return mi;
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::load(const std::string& path,
                                             const EngineOptions& options) {
  if (options.n_threads < 1 || options.n_threads > 256) {
    return InvalidArgument("EngineOptions.n_threads must be in [1, 256], got " +
                           std::to_string(options.n_threads));
  }
  if (options.n_seq_max < 1 || options.n_seq_max > 1024) {
    return InvalidArgument("EngineOptions.n_seq_max must be in [1, 1024], got " +
                           std::to_string(options.n_seq_max));
  }
  if (options.n_batch < 1) {
    return InvalidArgument("EngineOptions.n_batch must be positive, got " +
                           std::to_string(options.n_batch));
  }
  if (options.n_ctx < 0) return InvalidArgument("EngineOptions.n_ctx must be >= 0");
  auto impl = std::make_unique<Impl>();
  HEARTH_ASSIGN_OR_RETURN(impl->file, gguf::GgufFile::open(path));
  HEARTH_ASSIGN_OR_RETURN(impl->hp, engine::read_hparams(impl->file));
  HEARTH_ASSIGN_OR_RETURN(impl->w, engine::bind_weights(impl->file, impl->hp));
  const engine::Hparams& hp = impl->hp;
  impl->opts = options;
  impl->opts.on_load_progress = nullptr;  // used during load only, never kept
  // Quantized KV rows are whole blocks per head: checked before the context rule sizes
  // them.
  if (options.kv_type != KvType::kF16 && hp.head_dim % kKvBlock != 0) {
    return InvalidArgument(std::string("kv_type ") + kv_type_name(options.kv_type) +
                           " needs a head size that is a multiple of " + std::to_string(kKvBlock) +
                           "; this model's is " + std::to_string(hp.head_dim) +
                           " (use kv_type f16)");
  }
  if (options.n_embed_seq < 0 || options.n_embed_seq > 64) {
    return InvalidArgument("EngineOptions.n_embed_seq must be in [0, 64], got " +
                           std::to_string(options.n_embed_seq));
  }
  impl->opts.n_embed_seq = options.n_embed_seq > 0 ? options.n_embed_seq : (hp.encoder ? 8 : 1);
  // KV of every sequence the store holds: n_seq_max and the private embedding ones.
  const int32_t n_kv_seq = options.n_seq_max + impl->opts.n_embed_seq;
  HEARTH_ASSIGN_OR_RETURN(const ContextChoice ctx,
                          choose_context(kv_request(hp, options, n_kv_seq)));
  impl->opts.n_ctx = ctx.n_ctx;
  impl->n_threads = options.n_threads;
  impl->info = make_info(hp, impl->w, path, impl->opts.n_ctx, options.n_seq_max);
  impl->info.kv_bytes = ctx.kv_bytes;
  impl->info.n_embed_seq = impl->opts.n_embed_seq;
  impl->info.causal = hp.causal;
  impl->info.encoder = hp.encoder;
  if (hp.pooling_type >= 0) impl->info.pooling = *pooling_from_gguf(hp.pooling_type);
  impl->info.kv_budget_bytes = ctx.budget_bytes;
  std::string why = "the model's own";
  if (options.n_ctx > 0) why = "as configured";
  if (ctx.capped) {
    why = "the largest that fits the budget; the model's own is " + std::to_string(hp.n_ctx_train);
  }
  log::info("engine: " + impl->info.name + ": context " + std::to_string(ctx.n_ctx) + " (" + why +
            "), KV " + format_bytes(ctx.kv_bytes) + " for " + std::to_string(n_kv_seq) +
            " sequences, budget " + format_bytes(ctx.budget_bytes));
  if (auto chat_template = impl->file.get_string("tokenizer.chat_template"); chat_template.ok())
    impl->info.chat_template = *chat_template;

#if HEARTH_ENGINE_HAS_TOKENIZER
  {
    HEARTH_ASSIGN_OR_RETURN(auto vocab, vocab_from_gguf(impl->file));
    HEARTH_ASSIGN_OR_RETURN(auto tok, Tokenizer::create(std::move(vocab)));
    if (tok.n_vocab() > hp.n_vocab) {
      return InvalidArgument("tokenizer has " + std::to_string(tok.n_vocab()) +
                             " tokens but token_embd.weight has only " +
                             std::to_string(hp.n_vocab) + " rows");
    }
    impl->tokenizer = std::make_shared<Tokenizer>(std::move(tok));
  }
#endif

  // The layers on a GPU: how many (n_gpu_layers -1 or >= n_layer: all, and the output
  // head with them; 0: none, the CPU runs everything).
  Result<DeviceSpec> device = parse_device(options.device);
  if (!device.ok()) return InvalidArgument("device: " + device.status().message());
  if (Status st = check_n_gpu_layers(options.n_gpu_layers, *device); !st.ok())
    return InvalidArgument("n_gpu_layers: " + st.message());
  int32_t n_gpu = 0;
  if (!device->is_cpu()) {
    n_gpu = options.n_gpu_layers < 0 ? hp.n_layer : std::min(options.n_gpu_layers, hp.n_layer);
  }
  impl->pool = std::make_unique<kb::ThreadPool>(options.n_threads);
  impl->info.weights_placement = "file mapping";
  // With every layer and the head on the GPU the host reads only token_embd's rows: the
  // matrices stay in the file mapping, uncopied.
  if (!options.weights_in_place && n_gpu < hp.n_layer) {
    // A failed allocation is not fatal: the matrices stay readable in the mapping.
    Result<engine::WeightArena> arena = engine::copy_matrices_to_arena(
        impl->w, *impl->pool, engine::kb::active_kernels(), options.on_load_progress);
    if (arena.ok()) {
      impl->arena = std::move(*arena);
      impl->info.weights_placement = "huge-page copy";
      if (impl->arena.interleaved_matrices() > 0)
        impl->info.weights_placement += ", row groups interleaved";
    }
  }
  impl->inline_pool = std::make_unique<kb::ThreadPool>(1);
  impl->info.kv_type = options.kv_type;
  HEARTH_ASSIGN_OR_RETURN(
      engine::KvStore kv,
      // The host store holds the CPU layers' KV only (the GPU layers' is on the device);
      // it keeps every sequence's length either way.
      engine::KvStore::create(n_kv_seq, hp.n_layer - n_gpu, impl->opts.n_ctx, hp.kv_dim(),
                              options.kv_type, kv_ring(hp, options, n_gpu), hp.head_dim));
  impl->kv = std::make_unique<engine::KvStore>(std::move(kv));
  if (n_gpu > 0) {
    // The GPU takes the file's own block layout (the arena may have interleaved rows).
    HEARTH_ASSIGN_OR_RETURN(const engine::ModelWeights file_views,
                            engine::bind_weights(impl->file, hp));
    engine::GpuLayersConfig gc;
    gc.device_index = device->index;
    gc.n_layers = n_gpu;
    gc.output = n_gpu == hp.n_layer;
    gc.n_kv_seq = n_kv_seq;
    gc.n_ctx = impl->opts.n_ctx;
    gc.n_batch = impl->opts.n_batch;
    HEARTH_ASSIGN_OR_RETURN(impl->gpu, engine::GpuLayers::create(hp, file_views, options, gc));
    impl->info.device = impl->gpu->description();
    impl->info.n_gpu_layers = n_gpu;
    log::info("engine: " + impl->info.name + ": " + std::to_string(n_gpu) + " of " +
              std::to_string(hp.n_layer) + " layers" + (gc.output ? " and the output head" : "") +
              " on " + impl->info.device + " (" + format_bytes(impl->gpu->device_bytes()) +
              " of device memory)");
  }
  ForwardScratch& s = impl->s;
  const size_t B = static_cast<size_t>(impl->opts.n_batch);
  s.x.resize(B * hp.n_embd);
  s.xn.resize(B * hp.n_embd);
  s.q.resize(B * hp.q_dim());
  s.k.resize(B * hp.kv_dim());
  s.v.resize(B * hp.kv_dim());
  s.att.resize(B * hp.q_dim());
  s.proj.resize(B * hp.n_embd);
  s.gate.resize(B * hp.ffn_width());
  s.up.resize(B * hp.ffn_width());
  s.rope.resize(B * hp.n_rot);
  // A second set of angles only where the sliding layers' rope differs (gemma3).
  if (hp.n_swa > 0 &&
      (hp.rope_base_swa != hp.rope_base || hp.rope_freq_scale_swa != hp.rope_freq_scale)) {
    s.rope_swa.resize(B * hp.n_rot);
  }
  if (hp.is_moe()) {
    const size_t pairs = B * static_cast<size_t>(hp.n_expert_used);
    s.moe_probs.resize(B * hp.n_expert);
    s.moe_expert.resize(pairs);
    s.moe_weight.resize(pairs);
    s.moe_pairs.resize(pairs);
    s.moe_row.resize(pairs);
    s.moe_begin.resize(static_cast<size_t>(hp.n_expert) + 1);
    s.moe_next.resize(static_cast<size_t>(hp.n_expert));
    s.moe_x.resize(pairs * hp.n_embd);
    s.moe_y.resize(pairs * hp.n_embd);
    s.router_margin.assign(static_cast<size_t>(hp.n_layer), INFINITY);
  }
  s.q16.resize(B * hp.q_dim());
  s.k16.resize(B * hp.kv_dim());
  s.scores.resize(static_cast<size_t>(options.n_threads) *
                  engine::attend_tokens_scratch_floats(kAttentionBlockTokens,
                                                       hp.n_head / hp.n_head_kv, impl->opts.n_ctx,
                                                       hp.head_dim));
  // Only where a decode token's attention can run split (forward.cpp, attention_split).
  if (engine::kb::active_kernels().attend_scores != nullptr && options.kv_type == KvType::kF16 &&
      hp.causal && hp.n_head_kv <= kMaxSplitHeads && impl->opts.n_ctx >= kSplitMinPositions) {
    const int32_t group = hp.n_head / hp.n_head_kv;
    s.split_shared.resize(
        static_cast<size_t>(hp.n_head_kv) *
        engine::attend_tokens_scratch_floats(1, group, impl->opts.n_ctx, hp.head_dim));
    s.split_slots.resize(static_cast<size_t>(options.n_threads) *
                         engine::attend_split_scratch_floats(hp.n_head_kv, group, hp.head_dim));
  }
  s.attn_order.reserve(B);
  s.attn_blocks.reserve(B);
  s.out_x.resize(B * hp.n_embd);
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

const ModelInfo& Engine::info() const {
  return impl_->info;
}
const Tokenizer& Engine::tokenizer() const {
  return *impl_->tokenizer;
}

Status Engine::forward(std::span<const BatchToken> batch, std::vector<float>& logits_out) {
  if (impl_->hp.encoder) {
    return Unsupported("forward: " + impl_->hp.arch +
                       " is an embedding model (no vocabulary head): use embed_batch");
  }
  HEARTH_RETURN_IF_ERROR(impl_->validate(batch, /*allow_private=*/false));
  return impl_->run(batch, &logits_out, nullptr);
}

int32_t Engine::seq_len(int32_t seq) const {
  if (seq < 0 || seq >= impl_->opts.n_seq_max) return -1;
  return impl_->kv->len(seq);
}

namespace {
Status check_seq(int32_t seq, int32_t n_seq_max, const char* op) {
  if (seq < 0 || seq >= n_seq_max) {
    return InvalidArgument(std::string(op) + ": seq " + std::to_string(seq) + " is outside [0, " +
                           std::to_string(n_seq_max) + ")");
  }
  return OkStatus();
}
}  // namespace

Status Engine::seq_clear(int32_t seq) {
  HEARTH_RETURN_IF_ERROR(check_seq(seq, impl_->opts.n_seq_max, "seq_clear"));
  impl_->kv->set_len(seq, 0);
  return OkStatus();
}

Status Engine::seq_truncate(int32_t seq, int32_t n) {
  HEARTH_RETURN_IF_ERROR(check_seq(seq, impl_->opts.n_seq_max, "seq_truncate"));
  const engine::KvStore& kv = *impl_->kv;
  if (n < 0 || n > kv.len(seq)) {
    return OutOfRange("seq_truncate: n " + std::to_string(n) + " is outside [0, " +
                      std::to_string(kv.len(seq)) + "] for seq " + std::to_string(seq));
  }
  if (n == kv.len(seq)) return OkStatus();
  if (!kv.truncate_ok(seq, n)) {
    return FailedPrecondition(
        "seq_truncate: seq " + std::to_string(seq) + " cannot be cut to " + std::to_string(n) +
        " positions: its sliding-window layers keep a ring of the last " +
        std::to_string(kv.ring_capacity()) + " positions (window " + std::to_string(kv.window()) +
        ") and no longer hold position " + std::to_string(kv.oldest(seq) - 1) +
        "; the shortest it can keep is " + std::to_string(kv.min_truncate(seq)) +
        " (or 0; swa_full keeps every position)");
  }
  if (n == 0) {
    impl_->kv->set_len(seq, 0);
  } else {
    impl_->kv->append_to(seq, n);  // below len: the ring's oldest held position stays
  }
  return OkStatus();
}

size_t Engine::kv_bytes_per_position() const {
  return impl_->kv->bytes_per_position() + (impl_->gpu ? impl_->gpu->bytes_per_position() : 0);
}

size_t Engine::kv_pack_bytes(int32_t n_pos) const {
  const int32_t n = std::clamp(n_pos, 0, impl_->kv->n_ctx());
  return impl_->gpu_pack_bytes(n) + impl_->kv->pack_bytes(n);
}

Status Engine::kv_pack(int32_t seq, int32_t n_pos, std::vector<uint8_t>& out) const {
  HEARTH_RETURN_IF_ERROR(check_seq(seq, impl_->opts.n_seq_max, "kv_pack"));
  if (n_pos < 0 || n_pos > impl_->kv->len(seq)) {
    return OutOfRange("kv_pack: n_pos " + std::to_string(n_pos) + " is outside [0, " +
                      std::to_string(impl_->kv->len(seq)) + "] for seq " + std::to_string(seq));
  }
  if (!impl_->kv->pack_ok(seq, n_pos)) {
    return FailedPrecondition(
        "kv_pack: seq " + std::to_string(seq) + "'s sliding-window layers (window " +
        std::to_string(impl_->kv->window()) + ") no longer hold positions " +
        std::to_string(n_pos - impl_->kv->window()) + " .. " + std::to_string(n_pos - 1) +
        " (the oldest held is " + std::to_string(impl_->kv->oldest(seq)) + ")");
  }
  // The GPU layers' runs come first in the packed layout (layers 0 .. n_gpu - 1), then
  // the host store's.
  const size_t on_gpu = impl_->gpu_pack_bytes(n_pos);
  out.resize(on_gpu + impl_->kv->pack_bytes(n_pos));
  if (impl_->gpu) HEARTH_RETURN_IF_ERROR(impl_->gpu->pack(seq, n_pos, out.data()));
  impl_->kv->pack_to(seq, n_pos, out.data() + on_gpu);
  return OkStatus();
}

Status Engine::kv_unpack(int32_t seq, std::span<const uint8_t> bytes, int32_t n_pos) {
  HEARTH_RETURN_IF_ERROR(check_seq(seq, impl_->opts.n_seq_max, "kv_unpack"));
  if (n_pos < 0 || n_pos > impl_->kv->n_ctx()) {
    return OutOfRange("kv_unpack: n_pos " + std::to_string(n_pos) + " is outside [0, n_ctx " +
                      std::to_string(impl_->kv->n_ctx()) + "]");
  }
  const size_t on_gpu = impl_->gpu_pack_bytes(n_pos);
  const size_t want = on_gpu + impl_->kv->pack_bytes(n_pos);
  if (bytes.size() != want) {
    return InvalidArgument("kv_unpack: got " + std::to_string(bytes.size()) + " bytes for " +
                           std::to_string(n_pos) + " positions, expected " + std::to_string(want));
  }
  impl_->kv->unpack(seq, bytes.subspan(on_gpu), n_pos, impl_->pool.get());
  if (impl_->gpu) {
    if (Status st = impl_->gpu->unpack(seq, bytes.data(), n_pos); !st.ok()) {
      impl_->kv->set_len(seq, 0);
      return st;
    }
  }
  return OkStatus();
}

Status Engine::kv_copy(int32_t src, int32_t dst, int32_t n_pos) {
  HEARTH_RETURN_IF_ERROR(check_seq(src, impl_->opts.n_seq_max, "kv_copy"));
  HEARTH_RETURN_IF_ERROR(check_seq(dst, impl_->opts.n_seq_max, "kv_copy"));
  if (src == dst)
    return InvalidArgument("kv_copy: src and dst are both seq " + std::to_string(src));
  if (n_pos < 0 || n_pos > impl_->kv->len(src)) {
    return OutOfRange("kv_copy: n_pos " + std::to_string(n_pos) + " is outside [0, " +
                      std::to_string(impl_->kv->len(src)) + "] for seq " + std::to_string(src));
  }
  HEARTH_RETURN_IF_ERROR(impl_->kv->copy_prefix(src, dst, n_pos));
  if (impl_->gpu) {
    if (Status st = impl_->gpu->copy(src, dst, n_pos); !st.ok()) {
      impl_->kv->set_len(dst, 0);
      return st;
    }
  }
  return OkStatus();
}

Result<std::vector<std::span<uint8_t>>> Engine::kv_import_spans(int32_t seq, int32_t n_pos) {
  HEARTH_RETURN_IF_ERROR(check_seq(seq, impl_->opts.n_seq_max, "kv_import_spans"));
  if (n_pos < 0 || n_pos > impl_->kv->n_ctx()) {
    return OutOfRange("kv_import_spans: n_pos " + std::to_string(n_pos) + " is outside [0, n_ctx " +
                      std::to_string(impl_->kv->n_ctx()) + "]");
  }
  std::vector<std::span<uint8_t>> runs;
  if (impl_->gpu && n_pos > 0) {
    // The GPU layers' runs (two per GPU layer, first in the packed layout) land in pinned
    // staging that the commit copies to the device in one transfer.
    HEARTH_ASSIGN_OR_RETURN(std::span<uint8_t> staging, impl_->gpu->import_staging(n_pos));
    const size_t n_runs = 2 * static_cast<size_t>(impl_->gpu->n_layers());
    const size_t run = staging.size() / n_runs;
    for (size_t i = 0; i < n_runs; ++i) runs.push_back(staging.subspan(i * run, run));
  }
  std::vector<std::span<uint8_t>> host = impl_->kv->import_runs(seq, n_pos);
  runs.insert(runs.end(), host.begin(), host.end());
  return runs;
}

Status Engine::kv_import_commit(int32_t seq, int32_t n_pos) {
  HEARTH_RETURN_IF_ERROR(check_seq(seq, impl_->opts.n_seq_max, "kv_import_commit"));
  if (n_pos < 0 || n_pos > impl_->kv->n_ctx()) {
    return OutOfRange("kv_import_commit: n_pos " + std::to_string(n_pos) +
                      " is outside [0, n_ctx " + std::to_string(impl_->kv->n_ctx()) + "]");
  }
  if (impl_->gpu) HEARTH_RETURN_IF_ERROR(impl_->gpu->import_commit(seq, n_pos));
  impl_->kv->commit_import(seq, n_pos, impl_->pool.get());
  return OkStatus();
}

std::span<const float> Engine::router_margins() const {
  return impl_->s.router_margin;
}

void Engine::route_runner_up(int32_t layer) {
  impl_->s.runner_up_layer = layer;
}

std::string Engine::numerics_id() const {
  // Bumped whenever any arithmetic in forward.cpp, attention.cpp, rope.cpp or norm.cpp
  // changes; the kernels contribute their own id. Thread count and batch shape are
  // deliberately absent: they do not change the bits.
  // The architectures added after llama and qwen2 name themselves and their KV layout
  // (sliding-window layers: "window", a packed row holds their last n_swa positions;
  // "full" with EngineOptions::swa_full, every position), so a cached row never crosses
  // a change of either; llama and qwen2 keep the ids their saved rows carry.
  const engine::Hparams& hp = impl_->hp;
  std::string arch;
  if (hp.arch != "llama" && hp.arch != "qwen2") arch = ";arch=" + hp.arch;
  if (hp.is_moe()) {
    arch += ";moe=" + std::to_string(hp.n_expert) + "x" + std::to_string(hp.n_expert_used);
  }
  if (hp.n_swa > 0) {
    arch += ";swa=" + std::to_string(hp.n_swa) + "/" + std::to_string(hp.swa_period) +
            (impl_->kv->ring_capacity() > 0 ? ":window" : ":full");
  }
  // Quantized KV names its type and its attention order (attention.h); F16 keeps the id
  // its saved rows carry.
  const char* kv = "kv=f16;attn=f16q-f32acc-f16p;";
  if (impl_->kv->type() == KvType::kQ8_0) kv = "kv=q8_0;attn=f16q-blockfma-f16p;";
  if (impl_->kv->type() == KvType::kQ4_0) kv = "kv=q4_0;attn=f16q-blockfma-f16p;";
  std::string id = std::string("hearth-engine-2;") + kv + kb::kernels_id() + arch;
  if (impl_->gpu) id += impl_->gpu->tag();
  return id;
}

Result<std::vector<float>> Engine::embed(std::span<const int32_t> tokens) {
  if (tokens.empty()) return InvalidArgument("embed: no tokens");
  if (!impl_->hp.causal && tokens.size() > static_cast<size_t>(impl_->opts.n_batch)) {
    return OutOfRange("embed: " + std::to_string(tokens.size()) + " tokens exceed n_batch " +
                      std::to_string(impl_->opts.n_batch) +
                      " (non-causal attention evaluates a whole input in one pass)");
  }
  const int32_t seq = impl_->embed_seq();
  impl_->kv->set_len(seq, 0);
  std::vector<BatchToken> batch(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    batch[i] = BatchToken{tokens[i], static_cast<int32_t>(i), seq, false};
  }
  HEARTH_RETURN_IF_ERROR(impl_->validate(batch, /*allow_private=*/true));
  std::vector<float> hidden;
  const Status ran = impl_->run(batch, nullptr, &hidden);
  impl_->kv->set_len(seq, 0);
  HEARTH_RETURN_IF_ERROR(ran);
  const size_t e = static_cast<size_t>(impl_->hp.n_embd);
  std::vector<double> acc(e, 0.0);
  for (size_t t = 0; t < tokens.size(); ++t) {
    for (size_t i = 0; i < e; ++i) acc[i] += hidden[t * e + i];
  }
  double norm = 0.0;
  for (size_t i = 0; i < e; ++i) {
    acc[i] /= static_cast<double>(tokens.size());
    norm = std::fma(acc[i], acc[i], norm);  // explicit: the same bits in every build
  }
  norm = std::sqrt(norm);
  std::vector<float> out(e);
  for (size_t i = 0; i < e; ++i) out[i] = static_cast<float>(norm > 0 ? acc[i] / norm : 0.0);
  return out;
}

}  // namespace hearth
