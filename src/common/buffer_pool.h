// Large byte buffers kept for reuse instead of being handed back to the kernel.
//
// A saved KV row is packed on the model worker into tens or hundreds of megabytes, and
// every stream waits meanwhile. Fresh memory costs a page fault and a zero fill per
// page on first touch: packing a 46 MB row into a new vector took 150 ms on the Zen 5
// VM of docs/benchmarks.md (its host backs each new guest page), into memory touched
// before 4 ms. So the cache hands every payload buffer back once it is done with it
// (written to a file, or copied into a RAM-tier slab on the tier's writer thread) and
// the next pack takes it again.
//
// A buffer is a std::vector<uint8_t> (the type every layer already passes payloads
// in). take(n) returns one of size n whose bytes are unspecified: the previous
// user's bytes where it was recycled, so the caller overwrites all n. The pool keeps
// at most `max_bytes` of capacity idle (oldest released dropped first); buffers are
// allocated with up to 1/4 headroom so a row a little longer than the last still
// fits the same buffer (the headroom is address space, not touched memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace hearth {

class BufferPool {
 public:
  // Buffers smaller than this are not worth pooling (malloc recycles them itself).
  static constexpr size_t kMinPooledBytes = size_t{1} << 20;

  explicit BufferPool(size_t max_bytes) : max_bytes_(max_bytes) {}

  // A buffer of size n: the smallest idle one whose capacity holds n, else a new one
  // (capacity rounded up, see above).
  std::vector<uint8_t> take(size_t n);
  // Returns a buffer for reuse (dropped when small, or when keeping it would exceed
  // max_bytes; the oldest idle buffers go first).
  void give(std::vector<uint8_t> v);

  size_t idle_bytes() const;
  size_t idle_buffers() const;
  // Buffers take() served from the pool / had to allocate (>= kMinPooledBytes only).
  uint64_t reused() const;
  uint64_t allocated() const;

 private:
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::deque<std::vector<uint8_t>> idle_;  // oldest released first
  size_t idle_bytes_ = 0;
  uint64_t reused_ = 0;
  uint64_t allocated_ = 0;
};

// The process's pool of KV payload buffers: Engine packs take from it, and the cache
// gives back what its tiers are done with (a RAM row's buffer when the row goes, a file
// row's after it is written). Keeps up to 1 GiB idle.
BufferPool& payload_buffers();

}  // namespace hearth
