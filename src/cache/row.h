// A published row of the meta index. Identity fields are immutable once the row
// is in a snapshot; the few fields readers update (last use, hits, the pin
// count) are atomics on the shared object, so a cache hit never republishes
// the index.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hearth/cache/types.h"
#include "hearth/sha256.h"

namespace hearth::cache {

struct Row {
  CacheKey key{};
  Tier tier = Tier::kRam;
  uint64_t size = 0;  // file / slab bytes
  uint64_t payload_offset = 0;
  uint64_t payload_bytes = 0;
  uint32_t payload_crc = 0;
  std::array<uint8_t, 48> header{};
  std::string location;  // final path, or "ram"
  Digest256 ns_id{};
  Digest256 fingerprint{};  // the namespace's model fingerprint (KVC TLV 0x01)
  std::shared_ptr<const std::vector<Token>> tokens;
  // Delta rows (KVC version 2): the parent row this one continues, on the same tier.
  // While this row is in the index it holds one pin on the parent (taken before the
  // delta is written, released by MetaIndex when this row leaves the index), so
  // eviction never removes a parent a live child needs. Null for a full row.
  std::shared_ptr<const Row> parent;
  uint32_t delta_depth = 0;    // 0: full row; else links down to the full root
  uint32_t parent_tokens = 0;  // the parent's token count
  uint32_t groups = 0;         // payload layout (KvcDelta::groups), deltas only
  uint64_t bytes_per_position = 0;
  uint64_t full_payload_bytes = 0;  // what a restore yields; == payload_bytes for a full row
  // RAM tier: the file image as two slabs, header/TLVs and payload, so a row pulled
  // from the remote tier can adopt its fetched payload vector without copying it.
  std::shared_ptr<const std::vector<uint8_t>> ram_prefix;
  std::shared_ptr<const void> ram_owner;  // keeps ram_data alive
  const uint8_t* ram_data = nullptr;
  // A large ram_file row's whole file mapped read-only and every page touched once, on
  // the tier's writer, and kept while the row lives (unmapped when the last reference
  // goes): a restore then copies or views the file with no mapping to set up on the
  // request path. Made before the row is published when this process saves it, else
  // after its first read (Cache::Impl::keep_mapping / ask_mapping). file_map is
  // written once, by whoever set mapping_asked, before file_data's release store;
  // readers use file_data() alone.
  mutable std::shared_ptr<const void> file_map;
  mutable std::atomic<const uint8_t*> file_data_{nullptr};  // file_map's first byte
  mutable std::atomic<bool> mapping_asked{false};
  const uint8_t* file_data() const { return file_data_.load(std::memory_order_acquire); }

  // Pin state: low 31 bits = active checkouts, top bit = dead (evicted or
  // dropped). Checkout increments and backs off if dead; eviction CASes 0 ->
  // dead, so a pinned row can never be evicted and a dead row never pinned.
  static constexpr uint32_t kDead = 0x80000000u;
  mutable std::atomic<uint32_t> pin{0};
  mutable std::atomic<uint64_t> last_used_ns{0};
  mutable std::atomic<uint32_t> hits{0};
  // RAM payload verified once already (later views skip the CRC pass).
  mutable std::atomic<bool> verified{false};

  bool try_pin() const {
    uint32_t prev = pin.fetch_add(1, std::memory_order_acq_rel);
    if (prev & kDead) {
      pin.fetch_sub(1, std::memory_order_acq_rel);
      return false;
    }
    return true;
  }
  void unpin() const { pin.fetch_sub(1, std::memory_order_acq_rel); }
  bool try_kill() const {
    uint32_t expected = 0;
    return pin.compare_exchange_strong(expected, kDead, std::memory_order_acq_rel);
  }
  bool dead() const { return pin.load(std::memory_order_acquire) & kDead; }
  uint32_t refcount() const { return pin.load(std::memory_order_acquire) & ~kDead; }
};

using RowPtr = std::shared_ptr<const Row>;

}  // namespace hearth::cache
