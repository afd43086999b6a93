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

KvStore::KvStore(int32_t n_seq, int32_t n_layer, int32_t n_ctx, int32_t kv_dim, KvType type)
    : n_seq_(n_seq),
      n_layer_(n_layer),
      n_ctx_(n_ctx),
      kv_dim_(kv_dim),
      type_(type),
      row_bytes_(kv_row_bytes(type, kv_dim)) {
  seq_bytes_ = static_cast<size_t>(n_layer) * 2 * static_cast<size_t>(n_ctx) * row_bytes_;
  len_.assign(static_cast<size_t>(n_seq), 0);
}

Result<KvStore> KvStore::create(int32_t n_seq, int32_t n_layer, int32_t n_ctx, int32_t kv_dim,
                                KvType type) {
  if (n_seq < 1 || n_layer < 1 || n_ctx < 1 || kv_dim < 1) {
    return InvalidArgument("KV store: n_seq, n_layer, n_ctx and kv_dim must be positive (got " +
                           std::to_string(n_seq) + ", " + std::to_string(n_layer) + ", " +
                           std::to_string(n_ctx) + ", " + std::to_string(kv_dim) + ")");
  }
  if (type != KvType::kF16 && kv_dim % kKvBlock != 0) {
    return InvalidArgument(std::string("KV store: kv_type ") + kv_type_name(type) +
                           " needs kv_dim to be a multiple of " + std::to_string(kKvBlock) +
                           " (got " + std::to_string(kv_dim) + ")");
  }
  KvStore kv(n_seq, n_layer, n_ctx, kv_dim, type);
  const size_t bytes = kv.seq_bytes_;
  kv.blocks_.reserve(static_cast<size_t>(n_seq));
  for (int32_t s = 0; s < n_seq; ++s) {
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

uint8_t* KvStore::row(int32_t seq, int32_t layer, int32_t kind, int32_t pos) {
  const size_t run = static_cast<size_t>(n_ctx_) * row_bytes_;
  return static_cast<uint8_t*>(blocks_[static_cast<size_t>(seq)].data()) +
         (static_cast<size_t>(layer) * 2 + static_cast<size_t>(kind)) * run +
         static_cast<size_t>(pos) * row_bytes_;
}

void KvStore::pack(int32_t seq, int32_t n, std::vector<uint8_t>& out) const {
  const size_t run_bytes = static_cast<size_t>(n) * row_bytes_;
  out.resize(run_bytes * 2 * static_cast<size_t>(n_layer_));
  uint8_t* dst = out.data();
  for (int32_t l = 0; l < n_layer_; ++l) {
    if (n == 0) break;
    std::memcpy(dst, k_bytes(seq, l, 0), run_bytes);
    dst += run_bytes;
    std::memcpy(dst, v_bytes(seq, l, 0), run_bytes);
    dst += run_bytes;
  }
}

void KvStore::copy_prefix(int32_t src, int32_t dst, int32_t n) {
  const size_t run_bytes = static_cast<size_t>(n) * row_bytes_;
  for (int32_t l = 0; l < n_layer_ && n > 0; ++l) {
    std::memcpy(k_bytes(dst, l, 0), k_bytes(src, l, 0), run_bytes);
    std::memcpy(v_bytes(dst, l, 0), v_bytes(src, l, 0), run_bytes);
  }
  set_len(dst, n);
}

std::vector<std::span<uint8_t>> KvStore::import_runs(int32_t seq, int32_t n) {
  set_len(seq, 0);
  std::vector<std::span<uint8_t>> runs;
  if (n == 0) return runs;
  const size_t run_bytes = static_cast<size_t>(n) * row_bytes_;
  for (int32_t l = 0; l < n_layer_; ++l) {
    runs.emplace_back(k_bytes(seq, l, 0), run_bytes);
    runs.emplace_back(v_bytes(seq, l, 0), run_bytes);
  }
  return runs;
}

void KvStore::unpack(int32_t seq, std::span<const uint8_t> bytes, int32_t n) {
  const size_t run_bytes = static_cast<size_t>(n) * row_bytes_;
  const uint8_t* src = bytes.data();
  for (int32_t l = 0; l < n_layer_; ++l) {
    if (n == 0) break;
    std::memcpy(k_bytes(seq, l, 0), src, run_bytes);
    src += run_bytes;
    std::memcpy(v_bytes(seq, l, 0), src, run_bytes);
    src += run_bytes;
  }
  set_len(seq, n);
}

}  // namespace hearth::engine
