// Checkout / checkin and the payload read paths. A lease pins its row (eviction
// skips pinned rows), so the bytes it reads are the bytes that were published.
// A delta row's lease also pins and verifies every link of its chain (parents
// first); its reads scatter each link's own payload into the whole payload.
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "cache/cache_impl.h"
#include "cache/crc32c.h"
#include "cache/direct_read.h"
#include "common/stream_copy.h"

namespace hearth::cache {

struct Lease::State {
  Cache::Impl* impl = nullptr;
  RowPtr row;
  RowInfo info;
  KvcInfo kvc;
  int fd = -1;
  const void* map = nullptr;  // io->map_read of the row's file (map_len bytes), or null
  size_t map_len = 0;
  bool view_verified = false;
  // A delta row's chain below it, root first, each link pinned and its metadata
  // verified against the link above; empty for a full row.
  std::vector<std::unique_ptr<State>> chain;
  std::vector<uint8_t> assembled;  // view() of a delta row: the whole payload

  // Opens a pinned row (the state owns the pin from here on): parses and checks its
  // metadata. `target` = the row asked for (counts its hit); a chain link only
  // refreshes its LRU time.
  static Result<std::unique_ptr<State>> open(Cache::Impl* impl, RowPtr row, bool target);
  // Resolves and verifies the chain below a delta row.
  Status open_chain();
  // This row's own stored payload into dst (sizes add up to its payload_bytes).
  Status read_own(std::span<const std::span<uint8_t>> dst);
  // The row's file mapped (its kept mapping, else once per lease): its payload's first
  // byte, or an error.
  Result<const uint8_t*> mapped_payload();

  void unmap() {
    if (map) impl->io->unmap(map, map_len);
    map = nullptr;
    map_len = 0;
  }

  ~State() {
    unmap();
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
    impl->drop_orphans();  // delta rows above it can no longer be restored
  }
  return why;
}

enum class ReadPath {
  kDirect,    // O_DIRECT into the caller's buffers: a large disk row mostly not cached
  kMapped,    // memcpy out of a populated mapping: a large ram_file row
  kKept,      // memcpy out of the row's kept mapping (Row::file_map)
  kBuffered,  // pread
};

// How a file row's payload is read. A disk row worth a direct read is large and mostly
// not in the page cache (a cached file is faster read buffered: a copy out of RAM). A
// large ram_file row lives in memory (tmpfs): copied out of a mapping or through pread,
// whichever this machine's restores measured as faster. Disk rows are never mapped: a
// page the kernel must read in behind a mapping reports a device error as SIGBUS,
// pread as EIO.
ReadPath choose_read_path(Cache::Impl* impl, const Row& row, int fd) {
  if (row.file_data() != nullptr) return ReadPath::kKept;
  if (row.tier == Tier::kRamFile) {
    if (!Cache::Impl::large_ram_file_row(row)) return ReadPath::kBuffered;
    return impl->ram_file_copy.choose() == CopyPath::kMapped ? ReadPath::kMapped
                                                             : ReadPath::kBuffered;
  }
  const uint64_t min = impl->cfg.direct_read_min_bytes;
  if (row.tier != Tier::kDisk || min == 0 || row.payload_bytes < min) return ReadPath::kBuffered;
  return cached_fraction(fd, row.size, row.payload_offset, row.payload_bytes) < 0.5
             ? ReadPath::kDirect
             : ReadPath::kBuffered;
}

// A file row at least this large is read (pread, or copied out of a mapping with its
// CRC) by two threads, each a half of it (see read_in_two); a view's CRC of a payload
// this large is computed the same way (crc_in_two).
constexpr uint64_t kSplitReadMinBytes = uint64_t{8} << 20;

// Runs second() on a helper thread while this thread runs first(), then joins; false,
// with neither run, when no thread could be started (the caller then does it in one).
template <class First, class Second>
bool run_in_two(First&& first, Second&& second) {
  std::thread helper;
  try {
    helper = std::thread(std::forward<Second>(second));
  } catch (const std::system_error&) {
    return false;
  }
  first();
  helper.join();
  return true;
}

// Reads a payload of `total` bytes into dst as two halves at once: the caller's thread
// the first, a helper thread the second, each with its own CRC, combined after. The
// kernel's copy out of the page cache is most of a cached file's read, and one thread
// leaves the memory bandwidth half used: a 46 MB row out of tmpfs on the Zen 5 VM
// (4 KiB pages) took 7.5-9 ms through one thread's preads, 4.1-4.9 ms through two. A
// copy out of a mapping (with its CRC) is split the same way.
// copy(pieces, from, crc) reads payload bytes [from, ...) into pieces. Without a helper
// thread (none could be started) the read is one pass, as before.
template <class Copy>
Status read_in_two(std::span<const std::span<uint8_t>> dst, uint64_t total, Copy& copy,
                   uint32_t* crc) {
  const uint64_t half = (total / 2 + kChunk - 1) / kChunk * kChunk;
  std::vector<std::span<uint8_t>> first, second;
  uint64_t at = 0;
  for (const auto& d : dst) {
    if (at + d.size() <= half) {
      first.push_back(d);
    } else if (at >= half) {
      second.push_back(d);
    } else {
      first.push_back(d.first(static_cast<size_t>(half - at)));
      second.push_back(d.subspan(static_cast<size_t>(half - at)));
    }
    at += d.size();
  }
  uint32_t crc_second = 0;
  Status first_status, second_status;
  if (!run_in_two([&] { first_status = copy(first, 0, crc); },
                  [&] { second_status = copy(second, half, &crc_second); })) {
    return copy(dst, 0, crc);
  }
  HEARTH_RETURN_IF_ERROR(first_status);
  HEARTH_RETURN_IF_ERROR(second_status);
  *crc = crc32c_combine(*crc, crc_second, total - half);
  return OkStatus();
}

// CRC32C of n bytes at p: by the caller's thread and a helper thread, a half each,
// combined, when n is at least kSplitReadMinBytes (one thread's CRC runs well below
// the memory's bandwidth); else, or when no thread could be started, in one pass.
uint32_t crc_in_two(const uint8_t* p, uint64_t n) {
  if (n < kSplitReadMinBytes) return crc32c(p, static_cast<size_t>(n));
  const uint64_t half = n / 2;
  uint32_t first = 0, second = 0;
  if (!run_in_two([&] { first = crc32c(p, static_cast<size_t>(half)); },
                  [&] { second = crc32c(p + half, static_cast<size_t>(n - half)); })) {
    return crc32c(p, static_cast<size_t>(n));
  }
  return crc32c_combine(first, second, n - half);
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
  return s_->row->full_payload_bytes;
}
bool Lease::resident() const {
  return s_->chain.empty() && (s_->row->ram_prefix || s_->row->file_data() != nullptr);
}

Status Lease::read_payload(std::span<uint8_t> dst) {
  const std::span<uint8_t> one[1] = {dst};
  return read_payload(std::span<const std::span<uint8_t>>(one));
}

Result<const uint8_t*> Lease::State::mapped_payload() {
  if (const uint8_t* kept = row->file_data()) return kept + row->payload_offset;
  if (map == nullptr) {
    const int r = impl->io->map_read(fd, row->size, &map);
    if (r < 0) return IoError("mmap " + row->location + ": " + std::strerror(-r));
    map_len = row->size;
  }
  return static_cast<const uint8_t*>(map) + row->payload_offset;
}

Status Lease::State::read_own(std::span<const std::span<uint8_t>> dst) {
  State& s = *this;
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
  // Where the bytes are copied from: the in-process slab, a mapping of the file, or
  // (null) the file through pread.
  const uint8_t* src = row.ram_prefix ? row.ram_data : nullptr;
  ReadPath path = ReadPath::kBuffered;
  const bool was_mapped = s.map != nullptr;
  if (!row.ram_prefix) {
    path = choose_read_path(s.impl, row, s.fd);
    if (path == ReadPath::kDirect) {
      Status st = direct_read(*s.impl->io, s.fd, row.payload_offset, dst, check ? &crc : nullptr);
      if (st.code() != ErrorCode::kUnsupported) return finish_file_read(s.impl, s.row, st, crc, t0);
      crc = 0;  // start over through the page cache
    } else if (path == ReadPath::kMapped || path == ReadPath::kKept) {
      auto m = s.mapped_payload();
      if (m.ok()) src = *m;  // else pread: the file may still be readable
    }
  }
  const bool crc_each = row.ram_prefix ? need_ram : check;
  // Payload bytes [from, ...) into pieces, in order, *c extended over them.
  auto copy_pieces = [&](std::span<const std::span<uint8_t>> pieces, uint64_t from,
                         uint32_t* c) -> Status {
    uint64_t at = from;  // payload offset of the next byte
    for (const auto& d : pieces) {
      if (src != nullptr && !crc_each) {
        // Nothing to check: one copy that stores past the caches (chunk by chunk it
        // would allocate every destination line first).
        stream_copy(d.data(), src + at, d.size());
        at += d.size();
        continue;
      }
      for (size_t off = 0; off < d.size(); off += kChunk) {
        const size_t n = std::min(kChunk, d.size() - off);
        uint8_t* out = d.data() + off;
        if (src != nullptr) {
          *c = crc32c_copy_extend(*c, out, src + at, n);  // one read of the source
        } else {
          HEARTH_RETURN_IF_ERROR(read_full(*s.impl->io, s.fd, out, n, row.payload_offset + at));
          // The CRC of each chunk while it is still in cache.
          if (crc_each) *c = crc32c_extend(*c, out, n);
        }
        at += n;
      }
    }
    return OkStatus();
  };
  Status copied;
  if (!row.ram_prefix && row.payload_bytes >= kSplitReadMinBytes) {
    copied = read_in_two(dst, row.payload_bytes, copy_pieces, &crc);
  } else {
    copied = copy_pieces(dst, 0, &crc);
  }
  if (!copied.ok()) return finish_file_read(s.impl, s.row, copied, crc, t0);
  if (!row.ram_prefix) {
    // The chooser learns what this read cost, the mapping's setup and teardown included
    // (a mapping this read made is dropped now; a later view() maps again). A read out
    // of a view()'s mapping or of the row's kept one paid neither, so it teaches nothing.
    const bool made_mapping = path == ReadPath::kMapped && src != nullptr && !was_mapped;
    if (Cache::Impl::large_ram_file_row(row) && (path == ReadPath::kBuffered || made_mapping)) {
      if (made_mapping) s.unmap();
      s.impl->ram_file_copy.record(src != nullptr ? CopyPath::kMapped : CopyPath::kPread,
                                   row.payload_bytes, now_ns() - t0);
    }
    Status done = finish_file_read(s.impl, s.row, OkStatus(), crc, t0);
    if (done.ok() && path != ReadPath::kKept) s.impl->ask_mapping(s.row);
    return done;
  }
  if (need_ram) {
    if (crc != row.payload_crc) {
      return corrupt(s.impl, s.row, DataLoss("ram slab payload crc32c mismatch"));
    }
    row.verified.store(true, std::memory_order_release);
  }
  s.impl->counters.add(Counter::kLoadTotalNs, now_ns() - t0);
  return OkStatus();
}

Status Lease::read_payload(std::span<const std::span<uint8_t>> dst) {
  State& s = *s_;
  if (s.chain.empty()) return s.read_own(dst);
  const Row& row = *s.row;
  uint64_t total = 0;
  for (const auto& d : dst) total += d.size();
  if (total != row.full_payload_bytes) {
    return InvalidArgument("read_payload: buffers hold " + std::to_string(total) +
                           " bytes, payload is " + std::to_string(row.full_payload_bytes));
  }
  // Start offset of each destination buffer in the whole payload.
  std::vector<uint64_t> starts;
  starts.reserve(dst.size());
  uint64_t at = 0;
  for (const auto& d : dst) {
    starts.push_back(at);
    at += d.size();
  }
  KvcDelta layout = *s.kvc.delta;
  const uint64_t n = s.kvc.tokens.size();
  std::vector<std::span<uint8_t>> pieces;
  auto read_link = [&](State& link) -> Status {
    const uint64_t first = link.kvc.delta ? link.kvc.delta->parent_tokens : 0;
    pieces.clear();
    for (auto [off, len] : kvc_delta_runs(layout, n, first, link.kvc.tokens.size())) {
      // The destination buffers covering [off, off + len).
      size_t i = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), off) -
                                     starts.begin()) -
                 1;
      while (len > 0) {
        const uint64_t in = off - starts[i];
        const uint64_t take = std::min<uint64_t>(len, dst[i].size() - in);
        if (take > 0) pieces.emplace_back(dst[i].data() + in, take);
        off += take;
        len -= take;
        ++i;
      }
    }
    return link.read_own(pieces);
  };
  for (auto& link : s.chain) {
    Status st = read_link(*link);
    if (!st.ok()) {
      // The link's own read dropped it if corrupt (and, with it, the rows above it).
      s.impl->counters.add(Counter::kDeltaBrokenChains);
      return st;
    }
  }
  return read_link(s);
}

Result<std::span<const uint8_t>> Lease::view() {
  State& s = *s_;
  const Row& row = *s.row;
  if (!s.chain.empty()) {
    // A delta row's payload exists whole nowhere: assemble it once.
    if (s.assembled.size() != row.full_payload_bytes) {
      std::vector<uint8_t> whole(row.full_payload_bytes);
      HEARTH_RETURN_IF_ERROR(read_payload(std::span<uint8_t>(whole)));
      s.assembled = std::move(whole);
    }
    return std::span<const uint8_t>(s.assembled);
  }
  uint64_t t0 = now_ns();
  std::span<const uint8_t> payload;
  if (row.ram_prefix) {
    payload = {row.ram_data, row.payload_bytes};
    if (s.impl->cfg.verify_on_load && !row.verified.load(std::memory_order_acquire)) {
      if (crc_in_two(payload.data(), payload.size()) != row.payload_crc) {
        return corrupt(s.impl, s.row, DataLoss("ram slab payload crc32c mismatch"));
      }
      row.verified.store(true, std::memory_order_release);
    }
    s.view_verified = true;
  } else {
    auto m = s.mapped_payload();
    if (!m.ok()) return m.status();
    payload = {*m, row.payload_bytes};
    if (s.impl->cfg.verify_on_load && !s.view_verified) {
      if (crc_in_two(payload.data(), payload.size()) != row.payload_crc) {
        return corrupt(s.impl, s.row, DataLoss("kvc: payload crc32c mismatch in " + row.location));
      }
    }
    if (!s.view_verified && row.file_data() == nullptr) s.impl->ask_mapping(s.row);
    s.view_verified = true;
  }
  s.impl->counters.add(Counter::kLoadTotalNs, now_ns() - t0);
  return payload;
}

Result<Lease> Cache::checkout(const CacheKey& key) {
  Impl* impl = impl_.get();
  RowPtr row = impl->meta.find(key);
  if (!row || !row->try_pin()) return NotFound("cache: no row for key " + to_hex(key));
  HEARTH_ASSIGN_OR_RETURN(std::unique_ptr<Lease::State> st, Lease::State::open(impl, row, true));
  if (row->parent || st->kvc.delta) HEARTH_RETURN_IF_ERROR(st->open_chain());
  return Lease(std::move(st));
}

std::optional<std::vector<uint8_t>> Cache::Impl::local_full_payload(const CacheKey& key) {
  RowPtr row = meta.find(key);
  if (!row || !row->try_pin()) return std::nullopt;
  auto st = Lease::State::open(this, row, false);
  if (!st.ok()) return std::nullopt;
  if ((row->parent || (*st)->kvc.delta) && !(*st)->open_chain().ok()) return std::nullopt;
  Lease lease(std::move(st).value());
  std::vector<uint8_t> whole(lease.payload_size());
  if (!lease.read_payload(std::span<uint8_t>(whole)).ok()) return std::nullopt;
  return whole;
}

Result<std::unique_ptr<Lease::State>> Lease::State::open(Cache::Impl* impl, RowPtr row,
                                                         bool target) {
  const CacheKey key = row->key;
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
  impl->touch(*row);
  if (target) {
    uint32_t hits = row->hits.fetch_add(1, std::memory_order_relaxed) + 1;
    if (FileTier* ft = impl->file_tier(row->tier)) ft->write_hits(row->location, hits);
  }
  st->info = impl->to_info(*row);
  return st;
}

Status Lease::State::open_chain() {
  // Any broken link is a miss: the delta row can never be restored, so it is dropped
  // (with the rows above it) and counted.
  auto broken = [this](const std::string& why) -> Status {
    impl->counters.add(Counter::kDeltaBrokenChains);
    Status s = DataLoss("kvc: delta chain of " + to_hex(row->key) + " broken: " + why);
    return corrupt(impl, row, s);
  };
  std::vector<std::unique_ptr<State>> links;
  const State* child = this;
  while (child->kvc.delta || child->row->parent) {
    if (!child->kvc.delta || !child->row->parent) {
      return broken("the index and the row's header disagree on whether it is a delta");
    }
    if (links.size() >= kMaxDeltaDepth) return broken("more than kMaxDeltaDepth links");
    const KvcDelta& d = *child->kvc.delta;
    const RowPtr& expect = child->row->parent;
    RowPtr p = impl->meta.find(d.parent_key);
    if (!p || p != expect) return broken("parent " + to_hex(d.parent_key) + " is not in the index");
    if (!p->try_pin()) return broken("parent " + to_hex(d.parent_key) + " was evicted");
    auto ps = open(impl, p, false);
    if (!ps.ok()) {
      // Known bad, or gone from the index (its file vanished): this row is an orphan.
      if (ps.status().code() == ErrorCode::kDataLoss || impl->meta.find(d.parent_key) != p) {
        return broken(ps.status().message());
      }
      impl->counters.add(Counter::kLoadErrors);
      return ps.status();  // unreadable now (degraded tier): a miss, the row stays
    }
    const KvcInfo& pk = (*ps)->kvc;
    if (pk.key() != d.parent_key || pk.tokens.size() != d.parent_tokens) {
      return broken("parent's key or token count differs from the header's");
    }
    if (pk.ns.fingerprint != kvc.ns.fingerprint) return broken("parent's fingerprint differs");
    const uint64_t parent_full =
        pk.delta ? pk.delta->full_payload_bytes : (*ps)->row->payload_bytes;
    if (parent_full != uint64_t(d.groups) * d.bytes_per_position * d.parent_tokens ||
        (pk.delta &&
         (pk.delta->groups != d.groups || pk.delta->bytes_per_position != d.bytes_per_position)) ||
        (pk.delta ? pk.delta->depth : 0) + 1 != d.depth) {
      return broken("parent's layout or depth does not continue into this link");
    }
    links.push_back(std::move(ps).value());
    child = links.back().get();
  }
  std::reverse(links.begin(), links.end());
  chain = std::move(links);
  return OkStatus();
}

}  // namespace hearth::cache
