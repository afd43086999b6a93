// The layers of a model that run on a GPU (docs/gpu.md): their weights and F16 KV in
// device memory, and the forward pass of those layers, plus the output head when every
// layer is there. The engine keeps everything else: tokenizer, embeddings lookup, rope
// angles, the sequences' lengths (its KvStore) and the layers left on the CPU.
//
// Only this class and src/engine/cuda know CUDA; a build without it (HEARTH_CUDA off)
// compiles create() to an error naming the build option.
//
// Numerics: the GPU's kernels have their own fixed reduction orders (matmul.h,
// layer_ops.h), deterministic and batch-invariant like the CPU's, but other bits; the
// engine's numerics_id() carries tag() so GPU rows never meet CPU rows in the cache.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "engine/model/hparams.h"
#include "engine/model/weights.h"
#include "hearth/engine/engine.h"
#include "hearth/status.h"

namespace hearth::engine {

struct GpuLayersConfig {
  int device_index = 0;
  int32_t n_layers = 0;  // layers [0, n_layers) run on the GPU
  bool output = false;   // the final norm and output head too (n_layers == n_layer)
  int32_t n_kv_seq = 0;  // sequences of KV (the engine's user + private ones)
  int32_t n_ctx = 0;     // positions per sequence
  int32_t n_batch = 0;   // most tokens per forward chunk
};

class GpuLayers {
 public:
  // Uploads the weights of the configured layers (views into the GGUF file, its own
  // block layout) and allocates the KV and scratch. Errors name what the GPU path does
  // not support (architecture feature, weight type with its tensor, KV type) or the
  // CUDA call that failed.
  static Result<std::unique_ptr<GpuLayers>> create(const Hparams& hp, const ModelWeights& w,
                                                   const EngineOptions& opts,
                                                   const GpuLayersConfig& config);
  ~GpuLayers();
  GpuLayers(const GpuLayers&) = delete;
  GpuLayers& operator=(const GpuLayers&) = delete;

  int32_t n_layers() const;
  bool has_output() const;
  std::string description() const;  // "cuda:0 NVIDIA H200, sm_90"
  std::string tag() const;          // numerics_id() suffix
  uint64_t device_bytes() const;    // weights + KV + scratch on the device
  // KV bytes of one position of every GPU layer (K and V, F16).
  size_t bytes_per_position() const;

  // Runs the GPU layers over one chunk. x: the chunk's embeddings (T x n_embd, host);
  // rope: T x n_rot angles (engine/model/rope.h). When x_out is set, the hidden state
  // after the last GPU layer comes back there (T x n_embd, host: the CPU layers go on
  // from it); otherwise has_output() must hold and the logits of the tokens with
  // logits = true come back in `logits` (n_out x n_vocab, host, batch order).
  Status run(std::span<const BatchToken> chunk, const float* x, const float* rope, float* x_out,
             float* logits);

  // KV transfer of the GPU layers in kv_pack's layout (engine.h): for each GPU layer l,
  // its K rows [0, n) then its V rows, at packed + l * 2 * n * row_bytes. pack copies
  // device -> packed; unpack packed -> device; copy one sequence's first n positions to
  // another on the device.
  Status pack(int32_t seq, int32_t n, uint8_t* packed) const;
  Status unpack(int32_t seq, const uint8_t* packed, int32_t n);
  Status copy(int32_t src, int32_t dst, int32_t n);
  // In-place restore: pinned host runs (two per GPU layer, K then V, in pack order) that
  // import_commit() copies to the device in one transfer.
  Result<std::span<uint8_t>> import_staging(int32_t n);
  Status import_commit(int32_t seq, int32_t n);

  struct State;

 private:
  explicit GpuLayers(std::unique_ptr<State> st);
  Status enqueue(int64_t T, int64_t n_out, bool head);
  std::unique_ptr<State> st_;
};

}  // namespace hearth::engine
