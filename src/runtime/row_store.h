// The runtime's view of the shared KV cache: rows of (tokens, packed KV, optional logits
// of the last position) addressed by key = SHA-256(fingerprint || quant byte ||
// ctx_params_hash || tokens as little-endian int32). One store serves every model; rows
// are segregated by the namespace (fingerprint, quant byte, ctx_params_hash).
//
// MemoryRowStore (memory_row_store.h) implements it in-process; CacheRowStore adapts the
// hearth cache subsystem (include/hearth/cache*.h) when it is built in.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hearth/backend.h"
#include "hearth/runtime.h"
#include "hearth/sha256.h"

namespace hearth::runtime {

struct RowNamespace {
  Digest256 fingerprint{};
  uint8_t quant_byte = 0;
  Digest256 ctx_params_hash{};
  bool operator==(const RowNamespace&) const = default;
};

struct CacheRow {
  std::vector<TokenId> tokens;
  std::vector<uint8_t> kv;
  std::vector<float> last_logits;  // logits at position tokens.size()-1, or empty
};
using RowPtr = std::shared_ptr<const CacheRow>;

enum class SaveReason { kCold, kContinued, kFinish, kEvict, kShutdown };
const char* save_reason_name(SaveReason reason);

Digest256 row_key(const RowNamespace& ns, std::span<const TokenId> tokens);

class RowStore {
 public:
  virtual ~RowStore() = default;
  // Row stored under `key`, if published.
  virtual RowPtr lookup_exact(const Digest256& key) = 0;
  // Like lookup_exact, but when a save of `key` is in flight waits up to `wait` for it to
  // publish. *waited reports whether a wait happened (a resume hit).
  virtual RowPtr lookup_exact_or_wait(const Digest256& key, std::chrono::milliseconds wait,
                                      bool* waited) = 0;
  // The longest published row of `ns` whose tokens are a prefix of `tokens` and at least
  // `min_tokens` long (radix lookup, then a stride walk over `stride`-aligned lengths).
  virtual RowPtr lookup_longest_prefix(const RowNamespace& ns, std::span<const TokenId> tokens,
                                       int32_t min_tokens, int32_t stride) = 0;
  // Stores a row. Async saves return once the row is queued (lookup_exact_or_wait sees it
  // in flight); sync saves return once it is published or `deadline` passed.
  virtual Result<Digest256> save(const RowNamespace& ns, CacheRow row, Tier tier,
                                 SaveReason reason, bool sync,
                                 std::chrono::milliseconds deadline) = 0;
  // Counters by name, see Runtime::cache_counters.
  virtual std::map<std::string, uint64_t> counters() const = 0;
  // Records a lookup outcome the store cannot see itself (e.g. "misses").
  virtual void count(const std::string& name) = 0;
  // Waits for queued async saves to publish (shutdown, tests).
  virtual void flush(std::chrono::milliseconds deadline) = 0;
};

}  // namespace hearth::runtime
