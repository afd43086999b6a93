// The runtime's view of the shared KV cache: rows of (tokens, packed KV, optional logits
// of the last position) addressed by key = SHA-256(fingerprint || quant byte ||
// ctx_params_hash || tokens as u32 LE) (hearth::cache::make_key). One store serves every
// model; rows are segregated by namespace (fingerprint, quant, ctx_params_hash).
//
// CacheRowStore (cache_row_store.h) implements it over hearth::cache::Cache.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hearth/cache/key.h"
#include "hearth/runtime/backend.h"
#include "hearth/runtime/runtime.h"

namespace hearth::runtime {

using RowNamespace = cache::KeyNamespace;
using RowKey = cache::CacheKey;

struct CacheRow {
  std::vector<TokenId> tokens;
  std::vector<uint8_t> kv;
  std::vector<float> last_logits;  // logits at position tokens.size()-1, or empty
  // Streaming restore, set by the cache-backed store instead of filling `kv`: reads the
  // payload into buffers filled in order (CRC-checked before the call returns OK), e.g. a
  // backend's in-place KV import spans, so a restore is one pass into the KV. `pin` keeps
  // the cache lease (the row cannot be evicted under the reader) and the store alive.
  std::shared_ptr<const void> pin;
  std::function<Status(std::span<const std::span<uint8_t>>)> read_into;
  // Set too for a row in this process's memory (a RAM slab, not a delta row): the payload
  // where it lies, CRC-checked on its first use. A restore unpacks from it in one pass,
  // K turned into tiles on the way, instead of a copy into the KV and a second pass
  // over K there.
  std::function<Result<std::span<const uint8_t>>()> view;
  size_t payload_size = 0;
  Tier tier = Tier::kRam;  // where the row was found
  double load_ms = 0;      // checkout (header, TLVs, key replay) before the restore
  // The payload as bytes in memory (not for read_into rows).
  std::span<const uint8_t> kv_bytes() const { return {kv.data(), kv.size()}; }
};
using RowPtr = std::shared_ptr<const CacheRow>;

// A lookup hit: the row and how many of its leading tokens match the prompt (a radix hit
// may cover only part of a row: restore it whole, then truncate to n_tokens).
struct RowHit {
  RowPtr row;
  size_t n_tokens = 0;
  explicit operator bool() const { return row != nullptr; }
};

using cache::save_reason_name;

RowKey row_key(const RowNamespace& ns, std::span<const TokenId> tokens);

// Extra facts written into a row's KVC header.
struct RowMeta {
  uint8_t quant_bits = 16;
  uint32_t context_size = 0;
  cache::FingerprintMode fingerprint_mode = cache::FingerprintMode::kGgufChunked;
  int32_t kv_groups = 0;  // BackendInfo::kv_pack_groups: the payload's delta layout
};

class RowStore {
 public:
  virtual ~RowStore() = default;
  // The row published under `key`, counted as an exact hit, or as a resume hit when
  // `resume` (the caller waited for its save); a miss when absent.
  virtual RowHit lookup_exact(const RowKey& key, bool resume) = 0;
  // Whether a save of `key` is queued or being written and not yet published: a resume
  // lookup waits for it (never blocks, counts nothing).
  virtual bool save_pending(const RowKey& key) const = 0;
  // Whether a save of `key` would be dropped as a duplicate (published or in flight);
  // counted as the cache's duplicate_dropped when so.
  virtual bool drop_duplicate_save(const RowKey& key) = 0;
  // The row of `ns` sharing the longest token prefix with `tokens` (radix), else the
  // stride walk over `stride`-aligned prefixes. Hits shorter than min_tokens are ignored.
  virtual RowHit lookup_longest_prefix(const RowNamespace& ns, std::span<const TokenId> tokens,
                                       size_t min_tokens, size_t stride) = 0;
  // Async saves return once queued (save_pending sees the key at once; ResourceExhausted
  // when the tier's queue is full: dropped, counted as saves_dropped); sync saves return
  // once published or failed. Returns the row's key.
  virtual Result<RowKey> save(const RowNamespace& ns, const RowMeta& meta, CacheRow row, Tier tier,
                              SaveReason reason, bool sync) = 0;
  virtual bool tier_enabled(Tier tier) const = 0;
  // Cache counters plus the runtime's own ("runtime_hits_exact", ...).
  virtual std::map<std::string, uint64_t> counters() const = 0;
  // Adds `by` to the runtime counter "runtime_<name>".
  virtual void count(const std::string& name, uint64_t by = 1) = 0;
  // Waits for queued async saves to publish (shutdown, tests); false if `deadline` passed
  // first.
  virtual bool flush(std::chrono::milliseconds deadline) = 0;
  // Operator surface (Runtime::cache_rows / cache_evict_bytes / cache_gc).
  virtual std::vector<CacheRowSummary> rows() const = 0;
  virtual CacheEvictSummary evict_bytes(uint64_t target, std::span<const Tier> tiers) = 0;
  virtual uint64_t gc() = 0;
  // Waits (bounded by `deadline`) until no async save of namespace `ns` is queued or being
  // written: after unload_model returns, that model's rows are published. false if
  // `deadline` passed first.
  virtual bool flush_namespace(const RowNamespace& ns, std::chrono::milliseconds deadline) = 0;
  // The tier's measured save bandwidth (bytes/s); 0 before any measurement.
  virtual double write_bytes_per_s(Tier tier) const = 0;
  // The cache's memory-pressure scheduler.
  virtual void pressure_enable(bool on) = 0;
  virtual cache::ForceCheckResult pressure_force_check() = 0;
  virtual cache::SchedulerStatus pressure_status() const = 0;
};

}  // namespace hearth::runtime
