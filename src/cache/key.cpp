#include "hearth/cache/key.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace hearth::cache {
namespace {

void feed_namespace(Sha256& sha, const KeyNamespace& ns) {
  sha.update(ns.fingerprint.data(), ns.fingerprint.size());
  uint8_t q = static_cast<uint8_t>(ns.quant);
  sha.update(&q, 1);
  sha.update(ns.ctx_params_hash.data(), ns.ctx_params_hash.size());
}

// Tokens go into the hash as u32 LE; on little-endian hosts that is their
// in-memory layout, so the span is hashed directly.
void feed_tokens(Sha256& sha, std::span<const Token> tokens) {
  if constexpr (std::endian::native == std::endian::little) {
    sha.update(tokens.data(), tokens.size() * sizeof(Token));
  } else {
    std::vector<uint8_t> enc = encode_tokens(tokens);
    sha.update(enc.data(), enc.size());
  }
}

}  // namespace

Digest256 KeyNamespace::id() const {
  Sha256 sha;
  feed_namespace(sha, *this);
  return sha.digest();
}

CacheKey make_key(const KeyNamespace& ns, std::span<const Token> tokens) {
  Sha256 sha;
  feed_namespace(sha, ns);
  feed_tokens(sha, tokens);
  return sha.digest();
}

KeyStream::KeyStream(const KeyNamespace& ns) { feed_namespace(sha_, ns); }

void KeyStream::append(std::span<const Token> tokens) {
  feed_tokens(sha_, tokens);
  count_ += tokens.size();
}

Digest256 effective_fingerprint(const Digest256& base, std::span<const LoraAdapterId> adapters) {
  if (adapters.empty()) return base;
  std::vector<LoraAdapterId> sorted(adapters.begin(), adapters.end());
  std::sort(sorted.begin(), sorted.end(), [](const LoraAdapterId& a, const LoraAdapterId& b) {
    if (a.sha256 != b.sha256) return a.sha256 < b.sha256;
    uint32_t sa, sb;
    std::memcpy(&sa, &a.scale, 4);
    std::memcpy(&sb, &b.scale, 4);
    return sa < sb;
  });
  Sha256 sha;
  static const char kDomain[] = "hearth-lora-v1";
  sha.update(kDomain, sizeof(kDomain) - 1);
  sha.update(base.data(), base.size());
  for (const auto& a : sorted) {
    sha.update(a.sha256.data(), a.sha256.size());
    uint32_t bits;
    std::memcpy(&bits, &a.scale, 4);
    uint8_t le[4] = {uint8_t(bits), uint8_t(bits >> 8), uint8_t(bits >> 16), uint8_t(bits >> 24)};
    sha.update(le, 4);
  }
  return sha.digest();
}

std::vector<uint8_t> encode_tokens(std::span<const Token> tokens) {
  std::vector<uint8_t> out(tokens.size() * 4);
  for (size_t i = 0; i < tokens.size(); ++i) {
    Token t = tokens[i];
    out[4 * i] = uint8_t(t);
    out[4 * i + 1] = uint8_t(t >> 8);
    out[4 * i + 2] = uint8_t(t >> 16);
    out[4 * i + 3] = uint8_t(t >> 24);
  }
  return out;
}

Result<std::vector<Token>> decode_tokens(std::span<const uint8_t> bytes) {
  if (bytes.size() % 4 != 0) {
    return DataLoss("token bytes length " + std::to_string(bytes.size()) +
                    " is not a multiple of 4");
  }
  std::vector<Token> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint8_t* p = bytes.data() + 4 * i;
    out[i] = Token(p[0]) | Token(p[1]) << 8 | Token(p[2]) << 16 | Token(p[3]) << 24;
  }
  return out;
}

}  // namespace hearth::cache
