#include "engine/model/kv_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace hearth::engine {
namespace {

// Has the kernel write (zeros) into [p, p + bytes) once. File-tier restores read() rows
// straight into the KV, and on paravirtualized VMs with shadow paging (the 2-core build
// VM) the kernel's first copies into fresh user pages are slow even after user code
// wrote them: a 46 MB restore took 70-118 ms there without this pass, 2-61 ms with it,
// against ~4 ms for a warm copy. Elsewhere it costs about one more memset at load.
// Without /dev/zero the pages are written (zeros) by user code instead.
void warm_for_kernel_writes(void* p, size_t bytes) {
  const int fd = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::memset(p, 0, bytes);
    return;
  }
  auto* c = static_cast<char*>(p);
  for (size_t off = 0; off < bytes;) {
    const ssize_t r = ::read(fd, c + off, std::min<size_t>(bytes - off, size_t{1} << 20));
    if (r <= 0) break;
    off += static_cast<size_t>(r);
  }
  ::close(fd);
}

}  // namespace

KvStore::KvStore(int32_t n_seq, int32_t n_layer, int32_t n_ctx, int32_t kv_dim, KvType type,
                 const KvRing& ring)
    : n_seq_(n_seq),
      n_layer_(n_layer),
      n_ctx_(n_ctx),
      kv_dim_(kv_dim),
      type_(type),
      row_bytes_(kv_row_bytes(type, kv_dim)) {
  ring_.assign(static_cast<size_t>(n_layer), false);
  for (size_t l = 0; l < ring.layers.size() && l < ring_.size(); ++l) ring_[l] = ring.layers[l];
  if (ring.window > 0 && std::find(ring_.begin(), ring_.end(), true) != ring_.end()) {
    window_ = ring.window;
    ring_cap_ = ring_capacity_for(ring.window, ring.slack, n_ctx);
  }
  layer_offset_.resize(static_cast<size_t>(n_layer));
  size_t off = 0;
  for (int32_t l = 0; l < n_layer; ++l) {
    layer_offset_[static_cast<size_t>(l)] = off;
    off += 2 * static_cast<size_t>(slots(l)) * row_bytes_;
  }
  seq_bytes_ = off;
  len_.assign(static_cast<size_t>(n_seq), 0);
  lo_.assign(static_cast<size_t>(n_seq), 0);
}

int32_t KvStore::ring_capacity_for(int32_t window, int32_t slack, int32_t n_ctx) {
  const int64_t want = (static_cast<int64_t>(window) + std::max(slack, 0) + kKvRingAlign - 1) /
                       kKvRingAlign * kKvRingAlign;
  return static_cast<int32_t>(std::min<int64_t>(want, n_ctx));
}

Result<KvStore> KvStore::create(int32_t n_seq, int32_t n_layer, int32_t n_ctx, int32_t kv_dim,
                                KvType type, const KvRing& ring) {
  // n_layer 0 is a store of lengths only: every layer's KV lives on a GPU (GpuLayers).
  if (n_seq < 1 || n_layer < 0 || n_ctx < 1 || kv_dim < 1) {
    return InvalidArgument(
        "KV store: n_seq, n_ctx and kv_dim must be positive and n_layer >= 0 (got " +
        std::to_string(n_seq) + ", " + std::to_string(n_layer) + ", " + std::to_string(n_ctx) +
        ", " + std::to_string(kv_dim) + ")");
  }
  if (type != KvType::kF16 && kv_dim % kKvBlock != 0) {
    return InvalidArgument(std::string("KV store: kv_type ") + kv_type_name(type) +
                           " needs kv_dim to be a multiple of " + std::to_string(kKvBlock) +
                           " (got " + std::to_string(kv_dim) + ")");
  }
  if (ring.window < 0 || ring.slack < 0) {
    return InvalidArgument("KV store: ring window and slack must be >= 0 (got " +
                           std::to_string(ring.window) + ", " + std::to_string(ring.slack) + ")");
  }
  KvStore kv(n_seq, n_layer, n_ctx, kv_dim, type, ring);
  const size_t bytes = kv.seq_bytes_;
  kv.blocks_.reserve(static_cast<size_t>(n_seq));
  for (int32_t s = 0; s < n_seq && bytes > 0; ++s) {
    HEARTH_ASSIGN_OR_RETURN(HugePageRegion block,
                            HugePageRegion::create(bytes, "the KV cache of a sequence"));
    // Fresh anonymous memory reads as zeros; writing it commits every page here, at
    // load, and never on a request's path: a restore into a sequence's fresh pages
    // would otherwise pay one page fault per page (~34 ms for a 512-token TinyLlama
    // row on the 2-core VM with 4 KiB pages, against ~1 ms for the copy). llama.cpp
    // likewise clears its whole KV buffer at init.
    warm_for_kernel_writes(block.data(), bytes);
    kv.blocks_.push_back(std::move(block));
  }
  return kv;
}

uint8_t* KvStore::slot0(int32_t seq, int32_t layer, int32_t kind) const {
  return blocks_[static_cast<size_t>(seq)].data() + layer_offset_[static_cast<size_t>(layer)] +
         static_cast<size_t>(kind) * static_cast<size_t>(slots(layer)) * row_bytes_;
}

void KvStore::append_to(int32_t seq, int32_t n) {
  len_[static_cast<size_t>(seq)] = n;
  if (ring_cap_ > 0) {
    int32_t& lo = lo_[static_cast<size_t>(seq)];
    lo = std::max(lo, n - ring_cap_);
  }
}

int32_t KvStore::min_truncate(int32_t seq) const {
  const int32_t lo = oldest(seq);
  // A query at n sees n - window + 1 .. n; n itself is written by the next chunk.
  return lo == 0 ? 0 : lo + window_ - 1;
}

int32_t KvStore::pack_first(int32_t layer, int32_t n) const {
  return is_ring(layer) ? n - std::min(n, window_) : 0;
}

bool KvStore::pack_ok(int32_t seq, int32_t n) const {
  return ring_cap_ == 0 || n - std::min(n, window_) >= oldest(seq);
}

size_t KvStore::pack_bytes(int32_t n) const {
  size_t rows = 0;
  for (int32_t l = 0; l < n_layer_; ++l) rows += static_cast<size_t>(n - pack_first(l, n));
  return 2 * rows * row_bytes_;
}

void KvStore::runs(int32_t seq, int32_t layer, int32_t kind, int32_t first, int32_t n,
                   std::vector<std::span<uint8_t>>& out) {
  if (n <= first) return;
  const int32_t cap = slots(layer);
  const int32_t begin = first % cap;
  const int32_t count = n - first;  // <= cap
  const int32_t head = std::min(count, cap - begin);
  uint8_t* base = slot0(seq, layer, kind);
  out.emplace_back(base + static_cast<size_t>(begin) * row_bytes_,
                   static_cast<size_t>(head) * row_bytes_);
  if (head < count) out.emplace_back(base, static_cast<size_t>(count - head) * row_bytes_);
}

void KvStore::pack(int32_t seq, int32_t n, std::vector<uint8_t>& out) const {
  out.resize(pack_bytes(n));
  pack_to(seq, n, out.data());
}

void KvStore::pack_to(int32_t seq, int32_t n, uint8_t* dst) const {
  std::vector<std::span<uint8_t>> spans;
  auto* self = const_cast<KvStore*>(this);  // runs() hands out writable spans; only read here
  for (int32_t l = 0; l < n_layer_; ++l) {
    for (int32_t kind = 0; kind < 2; ++kind) self->runs(seq, l, kind, pack_first(l, n), n, spans);
  }
  for (const std::span<uint8_t> r : spans) {
    std::memcpy(dst, r.data(), r.size());
    dst += r.size();
  }
}

std::vector<std::span<uint8_t>> KvStore::import_runs(int32_t seq, int32_t n) {
  set_len(seq, 0);
  std::vector<std::span<uint8_t>> spans;
  for (int32_t l = 0; l < n_layer_; ++l) {
    for (int32_t kind = 0; kind < 2; ++kind) runs(seq, l, kind, pack_first(l, n), n, spans);
  }
  return spans;
}

void KvStore::commit_import(int32_t seq, int32_t n) {
  set_len(seq, n);
  if (ring_cap_ > 0) lo_[static_cast<size_t>(seq)] = n - std::min(n, window_);
}

void KvStore::unpack(int32_t seq, std::span<const uint8_t> bytes, int32_t n) {
  const uint8_t* src = bytes.data();
  for (const std::span<uint8_t> r : import_runs(seq, n)) {
    std::memcpy(r.data(), src, r.size());
    src += r.size();
  }
  commit_import(seq, n);
}

Status KvStore::copy_prefix(int32_t src, int32_t dst, int32_t n) {
  if (n < 0 || n > len(src)) {
    return OutOfRange("copy_prefix: n " + std::to_string(n) + " is outside [0, " +
                      std::to_string(len(src)) + "] for seq " + std::to_string(src));
  }
  if (!truncate_ok(src, n)) {
    return FailedPrecondition("copy_prefix: seq " + std::to_string(src) +
                              "'s sliding-window layers (window " + std::to_string(window_) +
                              ") no longer hold the positions a query at " + std::to_string(n) +
                              " sees; the oldest held is " + std::to_string(oldest(src)));
  }
  if (src == dst) return OkStatus();
  const int32_t lo = std::min(oldest(src), n);
  std::vector<std::span<uint8_t>> from, to;
  for (int32_t l = 0; l < n_layer_; ++l) {
    const int32_t first = is_ring(l) ? lo : 0;
    for (int32_t kind = 0; kind < 2; ++kind) {
      runs(src, l, kind, first, n, from);
      runs(dst, l, kind, first, n, to);
    }
  }
  // Same slots in both blocks, so the spans pair up one to one.
  for (size_t i = 0; i < from.size(); ++i)
    std::memcpy(to[i].data(), from[i].data(), from[i].size());
  len_[static_cast<size_t>(dst)] = n;
  lo_[static_cast<size_t>(dst)] = ring_cap_ > 0 ? lo : 0;
  return OkStatus();
}

}  // namespace hearth::engine
