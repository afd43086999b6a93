// Cache-key derivation. A key is SHA-256 over
//   fingerprint[32] || quant_byte[1] || ctx_params_hash[32] || tokens (u32 LE each)
// so a hit is token-exact by construction. KeyStream hashes a token stream once
// and can produce the key of every prefix it has seen so far (the stride walk
// takes a digest at each stride boundary instead of rehashing from token 0).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hearth/cache/types.h"
#include "hearth/sha256.h"

namespace hearth::cache {

// Everything in the key except the tokens: the namespace a row lives in.
struct KeyNamespace {
  Digest256 fingerprint{};      // effective fingerprint (model + LoRA adapters)
  QuantType quant = QuantType::kF16;
  Digest256 ctx_params_hash{};  // hash of the context parameters that shape the KV state

  bool operator==(const KeyNamespace&) const = default;
  // SHA-256(fingerprint || quant || ctx_params_hash): a compact id used to
  // partition the token-prefix index. Not a cache key.
  Digest256 id() const;
};

CacheKey make_key(const KeyNamespace& ns, std::span<const Token> tokens);

// Incremental key computation over a growing token stream.
class KeyStream {
 public:
  explicit KeyStream(const KeyNamespace& ns);
  void append(std::span<const Token> tokens);
  void append(Token t) { append(std::span<const Token>(&t, 1)); }
  size_t size() const { return count_; }
  // Key of the tokens appended so far; the stream stays open.
  CacheKey key() const { return CacheKey(sha_.digest()); }

 private:
  Sha256 sha_;
  size_t count_ = 0;
};

// One attached LoRA adapter: the SHA-256 of its file and its scale.
struct LoraAdapterId {
  Digest256 sha256{};
  float scale = 1.0f;
};

// The model fingerprint with adapters folded in. No adapters: the base
// fingerprint unchanged (rows stay shared with plain-model runs). Otherwise
// SHA-256("hearth-lora-v1" || base || for each adapter, sorted by (sha256, scale):
// sha256[32] || scale as IEEE-754 binary32 LE). Sorting makes it independent of
// attach order; scale 0 adapters are still folded in (they are attached).
Digest256 effective_fingerprint(const Digest256& base, std::span<const LoraAdapterId> adapters);

// u32 little-endian encoding used by the key and TLV 0x09.
std::vector<uint8_t> encode_tokens(std::span<const Token> tokens);
// Fails when bytes.size() is not a multiple of 4.
Result<std::vector<Token>> decode_tokens(std::span<const uint8_t> bytes);

}  // namespace hearth::cache
