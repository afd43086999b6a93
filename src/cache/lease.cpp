// Checkout / checkin and the payload read paths. A lease pins its row (eviction
// skips pinned rows), so the bytes it reads are the bytes that were published.
#include <fcntl.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "cache/cache_impl.h"
#include "cache/crc32c.h"
#include "cache/direct_read.h"

namespace hearth::cache {

struct Lease::State {
  Cache::Impl* impl = nullptr;
  RowPtr row;
  RowInfo info;
  KvcInfo kvc;
  int fd = -1;
  void* map = nullptr;
  size_t map_len = 0;
  bool view_verified = false;

  ~State() {
    if (map) ::munmap(map, map_len);
    if (fd >= 0) impl->io->close(fd);
    if (row) row->unpin();
  }
};

namespace {

constexpr size_t kChunk = 512u << 10;  // copy+CRC granularity: stays in L2

// Reports a corrupt or unreadable row: counted, dropped from the index (and its
// file removed), surfaced as a miss-equivalent error.
Status corrupt(Cache::Impl* impl, const RowPtr& row, Status why) {
  impl->counters.add(Counter::kLoadErrors);
  if (why.code() == ErrorCode::kDataLoss) {
    impl->drop_corrupt(row, why);
  } else {
    // Unreadable, not known bad: miss now, and let a rescan of the (now
    // degraded) tier bring the row back once the device recovers.
    if (why.code() == ErrorCode::kIo) {
      if (FileTier* ft = impl->file_tier(row->tier)) ft->set_degraded(true);
    }
    impl->meta.drop(row->key, row);
  }
  return why;
}

// A disk row worth a direct read: large, and mostly not in the page cache (a cached
// file is faster read buffered: a memcpy out of RAM).
bool use_direct_read(const Cache::Impl* impl, const Row& row, int fd) {
  const uint64_t min = impl->cfg.direct_read_min_bytes;
  if (row.tier != Tier::kDisk || min == 0 || row.payload_bytes < min) return false;
  return cached_fraction(fd, row.size, row.payload_offset, row.payload_bytes) < 0.5;
}

// The end of a file row's read: an I/O error marks the tier degraded, and an error or a
// CRC mismatch drops the row (a damaged row is never used).
Status finish_file_read(Cache::Impl* impl, const RowPtr& row, const Status& read, uint32_t crc,
                        uint64_t t0) {
  if (!read.ok()) {
    if (read.code() == ErrorCode::kIo) {
      if (FileTier* ft = impl->file_tier(row->tier)) ft->set_degraded(true);
    }
    return corrupt(impl, row, read);
  }
  if (impl->cfg.verify_on_load && crc != row->payload_crc) {
    return corrupt(impl, row, DataLoss("kvc: payload crc32c mismatch in " + row->location));
  }
  impl->counters.add(Counter::kLoadTotalNs, now_ns() - t0);
  return OkStatus();
}

}  // namespace

Lease::Lease(std::unique_ptr<State> s) : s_(std::move(s)) {}
Lease::Lease(Lease&&) noexcept = default;
Lease& Lease::operator=(Lease&&) noexcept = default;
Lease::~Lease() = default;

const RowInfo& Lease::row() const {
  return s_->info;
}
const KvcInfo& Lease::info() const {
  return s_->kvc;
}
uint64_t Lease::payload_size() const {
  return s_->row->payload_bytes;
}

Status Lease::read_payload(std::span<uint8_t> dst) {
  const std::span<uint8_t> one[1] = {dst};
  return read_payload(std::span<const std::span<uint8_t>>(one));
}

Status Lease::read_payload(std::span<const std::span<uint8_t>> dst) {
  State& s = *s_;
  const Row& row = *s.row;
  uint64_t total = 0;
  for (const auto& d : dst) total += d.size();
  if (total != row.payload_bytes) {
    return InvalidArgument("read_payload: buffers hold " + std::to_string(total) +
                           " bytes, payload is " + std::to_string(row.payload_bytes));
  }
  uint64_t t0 = now_ns();
  const bool check = s.impl->cfg.verify_on_load;
  // An immutable in-process slab is verified once; later loads are a memcpy.
  const bool need_ram = check && !row.verified.load(std::memory_order_acquire);
  uint32_t crc = 0;
  if (!row.ram_prefix && use_direct_read(s.impl, row, s.fd)) {
    Status st = direct_read(*s.impl->io, s.fd, row.payload_offset, dst, check ? &crc : nullptr);
    if (st.code() != ErrorCode::kUnsupported) return finish_file_read(s.impl, s.row, st, crc, t0);
    crc = 0;  // start over through the page cache
  }
  uint64_t at = 0;  // payload offset of the next byte
  for (const auto& d : dst) {
    for (size_t off = 0; off < d.size(); off += kChunk) {
      const size_t n = std::min(kChunk, d.size() - off);
      uint8_t* out = d.data() + off;
      if (row.ram_prefix) {
        std::memcpy(out, row.ram_data + at, n);
        if (need_ram) crc = crc32c_extend(crc, out, n);
      } else {
        // Large preads straight into the caller's buffer; CRC each chunk while it is
        // still in cache.
        Status st = read_full(*s.impl->io, s.fd, out, n, row.payload_offset + at);
        if (!st.ok()) return finish_file_read(s.impl, s.row, st, crc, t0);
        if (check) crc = crc32c_extend(crc, out, n);
      }
      at += n;
    }
  }
  if (!row.ram_prefix) return finish_file_read(s.impl, s.row, OkStatus(), crc, t0);
  if (need_ram) {
    if (crc != row.payload_crc) {
      return corrupt(s.impl, s.row, DataLoss("ram slab payload crc32c mismatch"));
    }
    row.verified.store(true, std::memory_order_release);
  }
  s.impl->counters.add(Counter::kLoadTotalNs, now_ns() - t0);
  return OkStatus();
}

Result<std::span<const uint8_t>> Lease::view() {
  State& s = *s_;
  const Row& row = *s.row;
  uint64_t t0 = now_ns();
  std::span<const uint8_t> payload;
  if (row.ram_prefix) {
    payload = {row.ram_data, row.payload_bytes};
    if (s.impl->cfg.verify_on_load && !row.verified.load(std::memory_order_acquire)) {
      if (crc32c(payload.data(), payload.size()) != row.payload_crc) {
        return corrupt(s.impl, s.row, DataLoss("ram slab payload crc32c mismatch"));
      }
      row.verified.store(true, std::memory_order_release);
    }
    s.view_verified = true;
  } else {
    if (!s.map) {
      void* m = ::mmap(nullptr, row.size, PROT_READ, MAP_PRIVATE, s.fd, 0);
      if (m == MAP_FAILED) return IoError("mmap " + row.location + ": " + std::strerror(errno));
      s.map = m;
      s.map_len = row.size;
    }
    payload = {static_cast<const uint8_t*>(s.map) + row.payload_offset, row.payload_bytes};
    if (s.impl->cfg.verify_on_load && !s.view_verified) {
      if (crc32c(payload.data(), payload.size()) != row.payload_crc) {
        return corrupt(s.impl, s.row, DataLoss("kvc: payload crc32c mismatch in " + row.location));
      }
    }
    s.view_verified = true;
  }
  s.impl->counters.add(Counter::kLoadTotalNs, now_ns() - t0);
  return payload;
}

Result<Lease> Cache::checkout(const CacheKey& key) {
  Impl* impl = impl_.get();
  RowPtr row = impl->meta.find(key);
  if (!row || !row->try_pin()) return NotFound("cache: no row for key " + to_hex(key));
  auto st = std::make_unique<Lease::State>();
  st->impl = impl;
  st->row = row;
  if (row->ram_prefix) {
    auto parsed = kvc_parse_meta(*row->ram_prefix, row->size);
    if (!parsed.ok()) return corrupt(impl, row, parsed.status());
    st->kvc = std::move(parsed).value();
  } else {
    FileTier* ft = impl->file_tier(row->tier);
    if (!ft || ft->reads_degraded()) {
      impl->counters.add(Counter::kLoadErrors);
      return Unavailable(std::string("cache: tier ") + tier_name(row->tier) + " is degraded");
    }
    int fd = impl->io->open(row->location, O_RDONLY, 0);
    if (fd < 0) {
      if (fd != -ENOENT) ft->set_degraded(true);
      return corrupt(impl, row, IoError("open " + row->location + ": " + std::strerror(-fd)));
    }
    st->fd = fd;
    uint64_t size = 0;
    if (impl->io->fstat_size(fd, &size) < 0 || size != row->size) {
      return corrupt(impl, row, DataLoss("kvc: " + row->location + " changed size"));
    }
    std::vector<uint8_t> prefix(row->payload_offset);
    Status rs = read_full(*impl->io, fd, prefix.data(), prefix.size(), 0);
    if (!rs.ok()) return corrupt(impl, row, rs);
    auto parsed = kvc_parse_meta(prefix, size);
    if (!parsed.ok()) return corrupt(impl, row, parsed.status());
    if (parsed->key() != key || parsed->payload_crc32c != row->payload_crc) {
      return corrupt(impl, row, DataLoss("kvc: key replay mismatch in " + row->location));
    }
    st->kvc = std::move(parsed).value();
  }
  uint32_t hits = row->hits.fetch_add(1, std::memory_order_relaxed) + 1;
  impl->touch(*row);
  if (FileTier* ft = impl->file_tier(row->tier)) ft->write_hits(row->location, hits);
  st->info = impl->to_info(*row);
  return Lease(std::move(st));
}

}  // namespace hearth::cache
