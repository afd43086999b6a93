#include "runtime/model_identity.h"

#include <filesystem>

#include "hearth/gguf/gguf.h"

namespace hearth::runtime {

Result<Digest256> fingerprint_gguf_chunked(const std::string& path) {
  auto file = gguf::GgufFile::open(path);
  if (!file.ok()) return sha256_file(path);
  Sha256 h;
  static constexpr char kTag[] = "hearth-fp-gguf-chunked-v1";
  h.update(kTag, sizeof kTag - 1);
  auto bytes = file->bytes();
  const uint64_t meta_end = std::min<uint64_t>(file->data_offset(), bytes.size());
  h.update(bytes.data(), meta_end);
  const gguf::TensorInfo* first = nullptr;
  for (const gguf::TensorInfo& t : file->tensors())
    if (!first || t.offset < first->offset) first = &t;
  if (first && first->data) h.update(first->data, first->n_bytes);
  return h.digest();
}

Result<RowNamespace> compute_namespace(const ModelConfig& config, const KvIdentity& identity) {
  RowNamespace ns;
  auto quant = cache::quant_type_from_byte(identity.quant_byte);
  if (!quant)
    return InvalidArgument("backend reports quant byte " + std::to_string(identity.quant_byte) +
                           ", which the cache does not know");
  ns.quant = *quant;
  Digest256 base{};
  const bool exists = !identity.model_path.empty() && std::filesystem::exists(identity.model_path);
  switch (config.fingerprint_mode) {
    case FingerprintMode::kFastUnsafe: {
      auto d = digest_from_hex(config.fingerprint_hex);
      if (!d.ok())
        return InvalidArgument("fingerprint_mode fast_unsafe needs fingerprint_hex: " +
                               d.status().message());
      base = *d;
      break;
    }
    case FingerprintMode::kSafe: {
      if (exists) {
        HEARTH_ASSIGN_OR_RETURN(base, sha256_file(identity.model_path));
      } else {
        base = Sha256::of(identity.model_path.data(), identity.model_path.size());
      }
      break;
    }
    case FingerprintMode::kGgufChunked: {
      if (exists) {
        HEARTH_ASSIGN_OR_RETURN(base, fingerprint_gguf_chunked(identity.model_path));
      } else {
        base = Sha256::of(identity.model_path.data(), identity.model_path.size());
      }
      break;
    }
  }
  // The base model's: a request's adapter set is folded in per request by the cache's
  // effective_fingerprint (model_worker_lora.cpp).
  ns.fingerprint = base;
  if (config.ctx_params_hash_hex) {
    auto d = digest_from_hex(*config.ctx_params_hash_hex);
    if (!d.ok()) return InvalidArgument("ctx_params_hash_hex: " + d.status().message());
    ns.ctx_params_hash = *d;
  } else {
    static constexpr char kTag[] = "hearth-ctx-params-v1\n";
    Sha256 h;
    h.update(kTag, sizeof kTag - 1);
    h.update(identity.kv_layout.data(), identity.kv_layout.size());
    ns.ctx_params_hash = h.digest();
  }
  return ns;
}

}  // namespace hearth::runtime
