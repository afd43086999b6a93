// SHA-256 over libcrypto's EVP interface, incremental: update() any number of
// times, then digest() (which does not end the stream: more updates may follow,
// so a token stream is hashed once with a digest taken at every stride boundary).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "hearth/status.h"

namespace hearth {

using Digest256 = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256& other);             // copies the running state
  Sha256& operator=(const Sha256& other);
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;

  void update(const void* data, size_t n);
  void update(std::span<const uint8_t> bytes) { update(bytes.data(), bytes.size()); }
  // Digest of everything fed so far; the stream stays open.
  Digest256 digest() const;

  static Digest256 of(const void* data, size_t n);

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

std::string to_hex(std::span<const uint8_t> bytes);
// Parses 64 hex chars; error names the problem.
Result<Digest256> digest_from_hex(std::string_view hex);
// SHA-256 of a whole file, streamed.
Result<Digest256> sha256_file(const std::string& path);

}  // namespace hearth
