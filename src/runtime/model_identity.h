// The cache namespace of a loaded model: fingerprint (by FingerprintMode), quant byte and
// ctx_params_hash. Two loads of the same file with the same KV layout get the same
// namespace, which is what lets unload + load keep a model's rows usable.
#pragma once

#include "hearth/runtime/backend.h"
#include "hearth/runtime/runtime.h"
#include "runtime/row_store.h"

namespace hearth::runtime {

// SHA-256 over "hearth-fp-gguf-chunked-v1" || bytes [0, data_offset) || the first tensor's
// bytes (lowest offset). Falls back to the whole file when it is not a GGUF.
Result<Digest256> fingerprint_gguf_chunked(const std::string& path);

// Fingerprint, quant byte and ctx_params_hash for `config` and its backend's identity.
// For backends without a file (a custom one, e.g. the tests' stub) the path string itself is hashed
// in safe and gguf_chunked modes when the file does not exist. The fingerprint is the base model's;
// requests under LoRA adapters key their rows on cache::effective_fingerprint of it
// (ModelWorker::resolve_adapters).
Result<RowNamespace> compute_namespace(const ModelConfig& config, const KvIdentity& identity);

}  // namespace hearth::runtime
