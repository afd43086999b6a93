#include "hearth/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

namespace hearth {

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;
  Ctx() : md(EVP_MD_CTX_new()) {
    if (md == nullptr || EVP_DigestInit_ex(md, EVP_sha256(), nullptr) != 1) {
      throw std::runtime_error("EVP sha256 init failed");
    }
  }
  ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

Sha256::Sha256(const Sha256& other) : ctx_(std::make_unique<Ctx>()) {
  EVP_MD_CTX_copy_ex(ctx_->md, other.ctx_->md);
}

Sha256& Sha256::operator=(const Sha256& other) {
  if (this != &other) EVP_MD_CTX_copy_ex(ctx_->md, other.ctx_->md);
  return *this;
}

void Sha256::update(const void* data, size_t n) {
  if (n > 0) EVP_DigestUpdate(ctx_->md, data, n);
}

Digest256 Sha256::digest() const {
  // Finalising destroys the state, so finalise a copy.
  EVP_MD_CTX* tmp = EVP_MD_CTX_new();
  EVP_MD_CTX_copy_ex(tmp, ctx_->md);
  Digest256 out{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(tmp, out.data(), &len);
  EVP_MD_CTX_free(tmp);
  return out;
}

Digest256 Sha256::of(const void* data, size_t n) {
  Sha256 h;
  h.update(data, n);
  return h.digest();
}

std::string to_hex(std::span<const uint8_t> bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  s.resize(bytes.size() * 2);
  for (size_t i = 0; i < bytes.size(); ++i) {
    s[2 * i] = kHex[bytes[i] >> 4];
    s[2 * i + 1] = kHex[bytes[i] & 15];
  }
  return s;
}

Result<Digest256> digest_from_hex(std::string_view hex) {
  if (hex.size() != 64) {
    return InvalidArgument("sha256 hex digest must be 64 characters, got " +
                           std::to_string(hex.size()));
  }
  Digest256 d{};
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < 32; ++i) {
    int hi = nib(hex[2 * i]), lo = nib(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return InvalidArgument("non-hex character in sha256 digest at position " +
                             std::to_string(2 * i));
    }
    d[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return d;
}

Result<Digest256> sha256_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return IoError("cannot open '" + path + "' for hashing");
  Sha256 h;
  std::vector<uint8_t> buf(1 << 20);
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) h.update(buf.data(), n);
  bool err = std::ferror(f) != 0;
  std::fclose(f);
  if (err) return IoError("read error while hashing '" + path + "'");
  return h.digest();
}

}  // namespace hearth
