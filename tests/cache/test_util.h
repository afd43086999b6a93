// Helpers shared by the cache tests.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "hearth/cache/cache.h"

namespace hearth::cache::testing {

// A fresh directory under $TMPDIR, removed on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "hearth-cache-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline KeyNamespace test_ns(uint8_t seed = 0xAA) {
  KeyNamespace ns;
  ns.fingerprint.fill(seed);
  ns.quant = QuantType::kF16;
  ns.ctx_params_hash.fill(0xBB);
  return ns;
}

inline std::vector<Token> seq_tokens(size_t n, Token start = 1) {
  std::vector<Token> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = start + static_cast<Token>(i);
  return t;
}

inline KvcBuildMeta make_meta(std::vector<Token> tokens, KeyNamespace ns = test_ns(),
                              SaveReason reason = SaveReason::kCold) {
  KvcBuildMeta m;
  m.save_reason = reason;
  m.quant_bits = 16;
  m.ns = ns;
  m.tokens = std::move(tokens);
  m.context_size = 4096;
  m.hostname = "test";
  m.prompt_text = "hello";
  return m;
}

inline std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

inline uint64_t counter(const Cache& c, Counter which) {
  return const_cast<Cache&>(c).counters().get(which);
}

}  // namespace hearth::cache::testing
