// Cache facade: the save pipeline (five-stage publish), lookups over index
// snapshots, eviction, tier recovery and the background sweeper.
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "cache/cache_impl.h"
#include "cache/crc32c.h"
#include "cache/slab_alloc.h"
#include "common/buffer_pool.h"

namespace hearth::cache {
namespace {

Counter save_counter(SaveReason r) {
  switch (r) {
    case SaveReason::kCold:
      return Counter::kSavesCold;
    case SaveReason::kContinued:
      return Counter::kSavesContinued;
    case SaveReason::kEvict:
      return Counter::kSavesEvict;
    case SaveReason::kShutdown:
      return Counter::kSavesShutdown;
    case SaveReason::kFinish:
      return Counter::kSavesFinish;
    case SaveReason::kUnknown:
      break;
  }
  return Counter::kCount;
}

Counter bytes_counter(Tier t) {
  switch (t) {
    case Tier::kRam:
      return Counter::kBytesRam;
    case Tier::kRamFile:
      return Counter::kBytesRamFile;
    case Tier::kDisk:
      return Counter::kBytesDisk;
  }
  return Counter::kBytesRam;
}

Counter rows_counter(Tier t) {
  switch (t) {
    case Tier::kRam:
      return Counter::kRowsRam;
    case Tier::kRamFile:
      return Counter::kRowsRamFile;
    case Tier::kDisk:
      return Counter::kRowsDisk;
  }
  return Counter::kRowsRam;
}

uint32_t tier_mask(std::span<const Tier> tiers) {
  if (tiers.empty()) return 0x7;
  uint32_t m = 0;
  for (Tier t : tiers) m |= 1u << static_cast<int>(t);
  return m;
}

struct Timer {
  uint64_t start = now_ns();
  uint64_t elapsed() const { return now_ns() - start; }
};

}  // namespace

// ---------------------------------------------------------------------------
// Impl

Cache::Impl::Impl(CacheConfig c) : cfg(std::move(c)), sched(cfg.scheduler) {
  io = cfg.io ? cfg.io : posix_io();
  if (!cfg.ram_file_dir.empty()) {
    files[1] = std::make_unique<FileTier>(Tier::kRamFile, cfg.ram_file_dir, io);
  }
  if (!cfg.disk_dir.empty()) files[2] = std::make_unique<FileTier>(Tier::kDisk, cfg.disk_dir, io);
  for (auto& f : files) {
    if (f) f->counters = &counters;
  }
  meta.on_change = [this](const Row& r, bool added) {
    if (added) {
      counters.add(bytes_counter(r.tier), r.size);
      counters.add(rows_counter(r.tier));
    } else {
      counters.sub(bytes_counter(r.tier), r.size);
      counters.sub(rows_counter(r.tier));
    }
  };
}

Cache::Impl::~Impl() {
  stop();
}

uint64_t Cache::Impl::quota(Tier t) const {
  switch (t) {
    case Tier::kRam:
      return cfg.ram_quota_bytes;
    case Tier::kRamFile:
      return cfg.ram_file_quota_bytes;
    case Tier::kDisk:
      return cfg.disk_quota_bytes;
  }
  return 0;
}

bool Cache::Impl::enabled(Tier t) const {
  return t == Tier::kRam ? cfg.ram_quota_bytes > 0 : file_tier(t) != nullptr;
}

bool Cache::Impl::wants_mapping(const Row& row) const {
  return large_ram_file_row(row) && cfg.keep_ram_file_mappings &&
         cfg.ram_file_read != CacheConfig::RamFileRead::kPread;
}

void Cache::Impl::ask_mapping(const RowPtr& row) {
  if (!wants_mapping(*row) || row->file_data() != nullptr) return;
  bool expected = false;
  if (!row->mapping_asked.compare_exchange_strong(expected, true)) return;
  TierWriter* w = writer(Tier::kRamFile);
  // The writers are drained before this Impl goes, so the job may use it.
  if (w == nullptr || !w->pool.submit([this, row] { keep_mapping(*row); })) {
    row->mapping_asked.store(false);
  }
}

void Cache::Impl::keep_mapping(const Row& row) {
  if (!wants_mapping(row)) return;
  if (kept_mappings->fetch_add(1) >= kMaxKeptMappings) {
    kept_mappings->fetch_sub(1);
    return;
  }
  const void* map = nullptr;
  const int fd = io->open(row.location, O_RDONLY, 0);
  // Only a file of the row's size: a page of the mapping past the file's end would
  // raise SIGBUS when touched (a truncated file is then a miss at its next checkout).
  uint64_t size = 0;
  int r = fd < 0 ? fd : io->fstat_size(fd, &size);
  if (r >= 0) r = size == row.size ? io->map_read(fd, row.size, &map) : -EINVAL;
  if (fd >= 0) io->close(fd);  // the mapping keeps the file
  if (r < 0) {
    kept_mappings->fetch_sub(1);
    return;
  }
  // Every page touched now, here on the writer: where the hypervisor shadows the guest's
  // page tables (the PVM guest of docs/benchmarks.md) a mapping's first touch of each
  // 4 KiB page is what costs, 20-100 ms for a 46 MB row, and it is paid once per row
  // instead of by a request.
  const auto* bytes = static_cast<const volatile uint8_t*>(map);
  uint8_t sink = 0;
  for (uint64_t off = 0; off < row.size; off += 4096) sink ^= bytes[off];
  (void)sink;
  row.file_map = std::shared_ptr<const void>(
      map, [io = io, len = row.size, count = kept_mappings](const void* p) {
        io->unmap(p, len);
        count->fetch_sub(1);
      });
  row.file_data_.store(static_cast<const uint8_t*>(map), std::memory_order_release);
}

std::shared_ptr<Row> Cache::Impl::row_from_scan(Tier tier, const ScannedFile& f) {
  auto row = std::make_shared<Row>();
  row->key = f.info.key();
  row->tier = tier;
  row->size = f.size;
  row->payload_offset = f.info.payload_offset;
  row->payload_bytes = f.info.payload_length;
  row->payload_crc = f.info.payload_crc32c;
  row->location = f.path;
  row->ns_id = f.info.ns.id();
  row->fingerprint = f.info.ns.fingerprint;
  row->tokens = std::make_shared<const std::vector<Token>>(f.info.tokens);
  row->full_payload_bytes = f.info.payload_length;
  if (const auto& d = f.info.delta) {
    row->delta_depth = d->depth;
    row->parent_tokens = d->parent_tokens;
    row->groups = d->groups;
    row->bytes_per_position = d->bytes_per_position;
    row->full_payload_bytes = d->full_payload_bytes;
  }
  row->hits.store(f.info.hit_count);
  // Map the persisted wall-clock last use onto the steady clock so LRU order
  // survives a restart.
  uint64_t now_unix = static_cast<uint64_t>(std::time(nullptr));
  uint64_t age_s = now_unix > f.info.last_used_time ? now_unix - f.info.last_used_time : 0;
  uint64_t now = now_ns();
  uint64_t age_ns = std::min<uint64_t>(age_s, now / 1000000000ull) * 1000000000ull;
  row->last_used_ns.store(now - age_ns);
  // Rebuild the 48 header bytes from what was parsed (the scan kept no copy).
  const KvcBuildMeta m = kvc_build_meta_of(f.info);
  auto prefix = kvc_build_prefix_with_crc(m, f.info.payload_length, f.info.payload_crc32c);
  if (prefix.ok()) std::memcpy(row->header.data(), prefix->data(), 48);
  return row;
}

bool Cache::Impl::link_parent(Row& row, const KvcInfo& info) {
  if (!info.delta) return true;
  const KvcDelta& d = *info.delta;
  RowPtr p = meta.find(d.parent_key);
  if (!p || p->tier != row.tier || !p->tokens || p->tokens->size() != d.parent_tokens) {
    return false;
  }
  if (p->delta_depth + 1 != d.depth) return false;
  if (p->full_payload_bytes != uint64_t(d.groups) * d.bytes_per_position * d.parent_tokens) {
    return false;
  }
  if (p->delta_depth > 0 &&
      (p->groups != d.groups || p->bytes_per_position != d.bytes_per_position)) {
    return false;
  }
  if (!p->try_pin()) return false;
  row.parent = std::move(p);
  return true;
}

bool Cache::Impl::insert_row(const std::shared_ptr<Row>& row) {
  if (meta.insert_available(row)) return true;
  if (row->parent) row->parent->unpin();
  return false;
}

void Cache::Impl::drop_orphans() {
  // Each pass drops the children of rows gone before it; a chain is at most
  // kMaxDeltaDepth links deep.
  for (uint32_t pass = 0; pass <= kMaxDeltaDepth; ++pass) {
    SnapshotPtr snap = meta.snapshot();
    std::vector<RowPtr> orphans;
    for (const auto& [k, r] : snap->rows) {
      if (!r->parent) continue;
      auto it = snap->rows.find(r->parent->key);
      if (it == snap->rows.end() || it->second != r->parent) orphans.push_back(r);
    }
    if (orphans.empty()) return;
    for (const RowPtr& r : orphans) {
      if (!meta.drop(r->key, r)) continue;
      if (FileTier* ft = file_tier(r->tier)) remove_unclaimed(*ft, r->key, r->location);
      counters.add(Counter::kDeltaOrphansDropped);
    }
  }
}

std::optional<Cache::Impl::DeltaPlan> Cache::Impl::plan_delta(Tier tier, const KvcBuildMeta& m,
                                                              uint64_t payload_size) {
  if (cfg.max_delta_depth == 0 || m.kv_groups == 0) return std::nullopt;
  const uint64_t n = m.tokens.size();
  const uint64_t per_token = uint64_t(m.kv_groups) * n;
  if (payload_size == 0 || payload_size % per_token != 0) return std::nullopt;
  const uint64_t bpp = payload_size / per_token;
  SnapshotPtr snap = meta.snapshot();
  auto root = snap->radix.find(m.ns.id());
  if (root == snap->radix.end()) return std::nullopt;
  const auto cands = radix_prefix_rows(root->second, m.tokens);
  // The longest row of this tier whose tokens prefix ours: the delta is then smallest.
  for (auto it = cands.rbegin(); it != cands.rend(); ++it) {
    if (it->first >= n) continue;
    auto f = snap->rows.find(it->second);
    if (f == snap->rows.end() || f->second->tier != tier) continue;
    const RowPtr& p = f->second;
    if (p->delta_depth + 1 > cfg.max_delta_depth) return std::nullopt;  // full row: new root
    if (p->full_payload_bytes != uint64_t(m.kv_groups) * bpp * it->first) return std::nullopt;
    if (p->delta_depth > 0 && (p->groups != m.kv_groups || p->bytes_per_position != bpp)) {
      return std::nullopt;
    }
    if (!p->try_pin()) return std::nullopt;
    DeltaPlan plan;
    plan.parent = p;
    plan.delta.parent_key = p->key;
    plan.delta.parent_tokens = it->first;
    plan.delta.groups = m.kv_groups;
    plan.delta.depth = p->delta_depth + 1;
    plan.delta.full_payload_bytes = payload_size;
    plan.delta.bytes_per_position = bpp;
    return plan;
  }
  return std::nullopt;
}

Status Cache::Impl::start() {
  for (int t = 1; t < kNumTiers; ++t) {
    FileTier* ft = files[t].get();
    if (!ft) continue;
    HEARTH_RETURN_IF_ERROR(ft->claim_dir());
    Status s = rescan(static_cast<Tier>(t));
    if (!s.ok())
      return Unavailable(std::string("cache: tier ") + tier_name(ft->tier()) +
                         " scan failed: " + s.message());
  }
  for (int t = 0; t < kNumTiers; ++t) {
    if (enabled(static_cast<Tier>(t))) {
      writers[t] = std::make_unique<TierWriter>(cfg.writer_threads, cfg.writer_queue_depth);
    }
  }
  HEARTH_RETURN_IF_ERROR(start_remote());
  sweeper = std::thread([this] {
    std::unique_lock<std::mutex> lock(bg_mu);
    while (!bg_stop) {
      uint64_t ms = cfg.sweep_interval_ms ? cfg.sweep_interval_ms : 3600 * 1000;
      bg_cv.wait_for(lock, std::chrono::milliseconds(ms), [&] { return bg_stop; });
      if (bg_stop || cfg.sweep_interval_ms == 0) continue;
      lock.unlock();
      sweep();
      for (int t = 1; t < kNumTiers; ++t) {
        if (files[t] && files[t]->degraded()) (void)rescan(static_cast<Tier>(t));
      }
      lock.lock();
    }
  });
  scheduler_thread = std::thread([this] {
    std::unique_lock<std::mutex> lock(bg_mu);
    while (!bg_stop) {
      uint64_t ms;
      bool on;
      {
        std::lock_guard<std::mutex> g(sched_mu);
        ms = sched.interval_ms;
        on = sched.enabled;
      }
      bg_cv.wait_for(lock, std::chrono::milliseconds(on ? ms : 200), [&] { return bg_stop; });
      if (bg_stop) break;
      if (!on) continue;
      lock.unlock();
      (void)force_check();
      lock.lock();
    }
  });
  return OkStatus();
}

void Cache::Impl::stop() {
  // One deadline for all tiers: they drain side by side.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(cfg.evict_save_timeout_ms);
  for (auto& w : writers) {
    if (w) w->pool.stop(deadline, [this] { counters.add(Counter::kSavesDropped); });
  }
  {
    std::lock_guard<std::mutex> lock(bg_mu);
    bg_stop = true;
  }
  bg_cv.notify_all();
  if (sweeper.joinable()) sweeper.join();
  if (scheduler_thread.joinable()) scheduler_thread.join();
  remote_sync.reset();
}

Status Cache::Impl::make_room(Tier tier, uint64_t bytes) {
  uint64_t q = quota(tier);
  if (bytes > q) {
    return ResourceExhausted(std::string("row of ") + std::to_string(bytes) +
                             " bytes exceeds the " + tier_name(tier) + " quota");
  }
  for (int attempt = 0; attempt < 4; ++attempt) {
    uint64_t used = meta.tier_bytes(tier);
    if (used + bytes <= q) return OkStatus();
    EvictResult r = evict(used + bytes - q, 1u << static_cast<int>(tier));
    if (r.rows == 0) break;
  }
  if (meta.tier_bytes(tier) + bytes <= q) return OkStatus();
  return ResourceExhausted(std::string(tier_name(tier)) +
                           " quota full of pinned or in-flight rows");
}

EvictResult Cache::Impl::evict(uint64_t target, uint32_t mask) {
  EvictResult res;
  // A parent pinned by its delta children becomes a candidate once they are gone: a
  // chain of depth d takes up to d + 1 rounds.
  const uint32_t rounds = 3 + cfg.max_delta_depth;
  for (uint32_t round = 0; round < rounds && res.bytes < target; ++round) {
    auto cands = meta.lru_candidates(mask);
    if (cands.empty()) break;
    std::vector<RowPtr> chosen;
    uint64_t planned = res.bytes;
    for (auto& r : cands) {
      if (planned >= target) break;
      planned += r->size;
      chosen.push_back(r);
    }
    auto removed = meta.remove_rows(chosen);
    if (removed.empty()) break;
    for (const auto& r : removed) {
      if (FileTier* ft = file_tier(r->tier)) remove_unclaimed(*ft, r->key, r->location);
      res.rows++;
      res.bytes += r->size;
      counters.add(Counter::kEvictions);
    }
  }
  return res;
}

void Cache::Impl::drop_corrupt(const RowPtr& row, const Status& why) {
  (void)why;
  if (meta.drop(row->key, row)) {
    if (FileTier* ft = file_tier(row->tier)) remove_unclaimed(*ft, row->key, row->location);
    counters.add(Counter::kCorruptFiles);
    drop_orphans();  // its delta children can no longer be restored
  }
}

void Cache::Impl::remove_unclaimed(FileTier& ft, const CacheKey& key, const std::string& path) {
  // Once a row leaves the index a new writer may reserve the key and link (or
  // adopt) a file at the same path; under the key's lock that writer is either
  // not linked yet (unlinking is safe: it links afresh) or holds the path.
  auto lock = ft.lock_key(key);
  if (!meta.claims_path(key, ft.tier())) ft.remove_quietly(path);
}

Status Cache::Impl::adopt_file(FileTier& ft, const CacheKey& key, const std::string& path) {
  HEARTH_RETURN_IF_ERROR(ft.verify(path, key));
  HEARTH_ASSIGN_OR_RETURN(ScannedFile f, ft.read_meta(path));
  auto row = row_from_scan(ft.tier(), f);
  if (!link_parent(*row, f.info)) {
    return DataLoss("delta row " + path + ": its parent row is not in the index");
  }
  if (!insert_row(row)) return AlreadyExists("key already published or reserved");
  return OkStatus();
}

Status Cache::Impl::rescan(Tier tier) {
  FileTier* ft = file_tier(tier);
  if (!ft) return OkStatus();
  HEARTH_RETURN_IF_ERROR(ft->claim_dir());
  // Rows published after this point may have files the listing misses, so only
  // rows already in the index before it count as vanished.
  SnapshotPtr before = meta.snapshot();
  auto scanned = ft->scan(nullptr, nullptr,
                          [this](const CacheKey& k, uint64_t t) { return meta.check(k, t); });
  if (!scanned.ok()) return scanned.status();
  // Reconcile: rows whose file vanished are dropped; new valid files join
  // (insert_available refuses keys a writer has reserved meanwhile).
  std::unordered_map<CacheKey, const ScannedFile*, DigestHash> on_disk;
  for (const auto& f : *scanned) on_disk[f.info.key()] = &f;
  for (const auto& [k, r] : before->rows) {
    if (r->tier == tier && !on_disk.count(k)) meta.drop(k, r);
  }
  // Parents before children: full rows, then deltas by depth, so each delta finds its
  // parent registered. A delta whose parent is absent is an orphan: never served, removed.
  std::vector<const ScannedFile*> order;
  for (const auto& f : *scanned) order.push_back(&f);
  std::stable_sort(order.begin(), order.end(), [](const ScannedFile* a, const ScannedFile* b) {
    return (a->info.delta ? a->info.delta->depth : 0) < (b->info.delta ? b->info.delta->depth : 0);
  });
  for (const ScannedFile* f : order) {
    const CacheKey key = f->info.key();
    if (meta.find(key)) continue;
    auto row = row_from_scan(tier, *f);
    if (!link_parent(*row, f->info)) {
      remove_unclaimed(*ft, key, f->path);
      counters.add(Counter::kDeltaOrphansDropped);
      continue;
    }
    insert_row(row);
  }
  drop_orphans();
  ft->set_degraded(false);
  return OkStatus();
}

void Cache::Impl::sweep() {
  for (auto& [key, res] : meta.take_expired()) {
    FileTier* ft = file_tier(res.tier);
    if (res.stage == ReserveStage::kPostLink && ft) {
      // The writer got as far as check_reservation + link(2), which it does
      // under the key's lock: holding the lock, the link is over (or never
      // happens), so what is at the path now is final.
      auto lock = ft->lock_key(key);
      Status s = adopt_file(*ft, key, res.path);
      if (s.ok()) {
        counters.add(Counter::kOrphansAdopted);
        continue;
      }
      // Unlink only a file that is there and bad. Not there: the link failed
      // and the writer cleaned up. Already registered or reserved anew: it
      // belongs to that row or writer. An I/O error says nothing of the file.
      ErrorCode c = s.code();
      if (c != ErrorCode::kNotFound && c != ErrorCode::kIo && c != ErrorCode::kAlreadyExists &&
          !meta.claims_path(key, res.tier)) {
        ft->remove_quietly(res.path);
      }
    }
    counters.add(Counter::kOrphansDropped);
  }
}

RowInfo Cache::Impl::to_info(const Row& r) const {
  RowInfo i;
  i.key = r.key;
  i.tier = r.tier;
  i.size = r.size;
  i.payload_bytes = r.payload_bytes;
  i.last_used_ns = r.last_used_ns.load(std::memory_order_relaxed);
  i.refcount = r.refcount();
  i.status = RowStatus::kAvailable;
  i.header = r.header;
  i.location = r.location;
  i.n_tokens = r.tokens ? static_cast<uint32_t>(r.tokens->size()) : 0;
  i.hits = r.hits.load(std::memory_order_relaxed);
  i.fingerprint = r.fingerprint;
  i.delta_depth = r.delta_depth;
  return i;
}

void Cache::Impl::touch(const Row& r) {
  r.last_used_ns.store(now_ns(), std::memory_order_relaxed);
}

namespace {

// A pin held on a delta's parent for the length of its save; released at scope exit
// unless handed to the published row.
class PinGuard {
 public:
  explicit PinGuard(RowPtr r) : r_(std::move(r)) {}
  PinGuard(const PinGuard&) = delete;
  PinGuard& operator=(const PinGuard&) = delete;
  ~PinGuard() {
    if (r_) r_->unpin();
  }
  RowPtr release() { return std::move(r_); }

 private:
  RowPtr r_;
};

}  // namespace

Result<CacheKey> Cache::Impl::do_save(Tier tier, const KvcBuildMeta& full_meta,
                                      std::span<const uint8_t> payload,
                                      std::vector<uint8_t>* owned) {
  Timer timer;
  auto fail = [&](Status s) -> Result<CacheKey> {
    counters.add(Counter::kSaveErrors);
    return s;
  };
  if (!enabled(tier)) return fail(Unavailable(std::string("tier ") + tier_name(tier) + " is off"));
  if (full_meta.tokens.empty()) return fail(InvalidArgument("save: no tokens"));
  if (full_meta.delta) {
    return fail(InvalidArgument("save: KvcBuildMeta::delta is the cache's to set, not a caller's"));
  }
  FileTier* ft = file_tier(tier);
  if (ft && ft->degraded()) {
    return fail(Unavailable(std::string("tier ") + tier_name(tier) + " is degraded"));
  }
  CacheKey key = make_key(full_meta.ns, full_meta.tokens);
  if (meta.find(key)) {
    counters.add(Counter::kDuplicateDropped);
    return AlreadyExists("key already published");
  }
  // A continuation of a row of this tier stores only the positions after it.
  const uint64_t full_payload_bytes = payload.size();
  // The caller's whole payload, still valid after a delta cut below (the cut writes a new
  // vector): the remote tier gets the whole row when the parent is not in Redis.
  const std::span<const uint8_t> full_payload = payload;
  std::optional<DeltaPlan> plan = plan_delta(tier, full_meta, payload.size());
  PinGuard parent_pin(plan ? plan->parent : nullptr);
  std::vector<uint8_t> delta_bytes;
  KvcBuildMeta delta_meta;
  if (plan) {
    delta_bytes = kvc_cut_delta(payload, full_meta.tokens.size(), plan->delta);
    payload = delta_bytes;
    if (owned != nullptr) owned = &delta_bytes;
    delta_meta = full_meta;
    delta_meta.delta = plan->delta;
  }
  const KvcBuildMeta& m = plan ? delta_meta : full_meta;
  // RAM tier: take the caller's vector, or copy the span once with the CRC
  // computed on the copy while it is hot in cache.
  std::shared_ptr<const void> ram_owner;
  const uint8_t* ram_data = nullptr;
  uint32_t crc = 0;
  if (!ft) {
    if (owned != nullptr) {
      auto v = std::make_shared<std::vector<uint8_t>>(std::move(*owned));
      crc = crc32c(v->data(), v->size());
      ram_data = v->data();
      payload = *v;
      ram_owner = std::move(v);
    } else {
      Slab slab = allocate_slab(payload.size());
      if (slab.data == nullptr) return fail(ResourceExhausted("ram slab allocation failed"));
      constexpr size_t kChunk = 1u << 20;
      for (size_t off = 0; off < payload.size(); off += kChunk) {
        size_t n = std::min(kChunk, payload.size() - off);
        std::memcpy(slab.data + off, payload.data() + off, n);
        crc = crc32c_extend(crc, slab.data + off, n);
      }
      ram_data = slab.data;
      payload = {slab.data, payload.size()};
      ram_owner = std::move(slab.owner);
    }
  } else {
    crc = crc32c(payload.data(), payload.size());
  }
  auto prefix = kvc_build_prefix_with_crc(m, payload.size(), crc);
  if (!prefix.ok()) return fail(prefix.status());
  uint64_t size = prefix->size() + payload.size();

  Status room = make_room(tier, size);
  if (!room.ok()) return fail(room);
  // Stage 1: reserve.
  auto token = meta.reserve(key, tier, size, cfg.reservation_ttl_ms);
  if (!token.ok()) {
    counters.add(Counter::kDuplicateDropped);
    return token.status();
  }

  auto row = std::make_shared<Row>();
  row->key = key;
  row->tier = tier;
  row->size = size;
  row->payload_offset = prefix->size();
  row->payload_bytes = payload.size();
  row->payload_crc = crc;
  std::memcpy(row->header.data(), prefix->data(), 48);
  row->ns_id = m.ns.id();
  row->fingerprint = m.ns.fingerprint;
  row->tokens = std::make_shared<const std::vector<Token>>(m.tokens);
  row->hits.store(m.hit_count);
  row->last_used_ns.store(now_ns());
  row->full_payload_bytes = full_payload_bytes;
  if (plan) {
    row->delta_depth = plan->delta.depth;
    row->parent_tokens = plan->delta.parent_tokens;
    row->groups = plan->delta.groups;
    row->bytes_per_position = plan->delta.bytes_per_position;
  }

  // The row as built here, for the remote tier (the ram tier takes `prefix`).
  std::vector<uint8_t> remote_prefix;
  if (remote && !remote_pull_in_progress()) remote_prefix = *prefix;
  if (!ft) {
    row->ram_prefix = std::make_shared<const std::vector<uint8_t>>(std::move(prefix).value());
    row->ram_owner = std::move(ram_owner);
    row->ram_data = ram_data;
    row->location = "ram";
    row->verified.store(true);                     // built from the caller's bytes just now
    if (plan) row->parent = parent_pin.release();  // the row holds the pin from now on
    if (!meta.publish(key, *token, row)) {
      if (row->parent) row->parent->unpin();
      return fail(Cancelled("reservation expired"));
    }
  } else {
    // Stage 2: temp file + fdatasync.
    auto tmp = ft->write_tmp(key, *token, *prefix, payload);
    if (!tmp.ok()) {
      meta.cancel(key, *token);
      return fail(tmp.status());
    }
    std::string final = ft->final_path(key);
    bool adopted_existing = false;
    {
      // Stages 3-4 under the key's lock, so the sweeper, eviction and scans
      // never judge or unlink the final path while we link it.
      auto lock = ft->lock_key(key);
      // Stage 3: is our reservation still the live one?
      if (!meta.mark_post_link(key, *token, final)) {
        ft->remove_quietly(*tmp);
        return fail(Cancelled("reservation expired before publish"));
      }
      // Stage 4: link(2) + directory fsync.
      auto linked = ft->link_publish(*tmp, key, size);
      if (!linked.ok()) {
        meta.cancel(key, *token);
        return fail(linked.status());
      }
      adopted_existing = *linked == LinkOutcome::kAdoptedExisting;
      if (adopted_existing) {
        // The row is the adopted file, whose payload may differ from ours.
        auto adopted = ft->read_meta(final);
        if (!adopted.ok()) {
          meta.cancel(key, *token);
          return fail(adopted.status());
        }
        row = row_from_scan(tier, *adopted);
        if (!link_parent(*row, adopted->info)) {
          meta.cancel(key, *token);
          return fail(DataLoss("adopted delta row " + final + ": its parent is not in the index"));
        }
        counters.add(Counter::kOrphansAdopted);
      } else if (plan) {
        row->parent = parent_pin.release();
      }
    }
    row->location = final;
    if (!adopted_existing) {
      row->mapping_asked.store(true);
      keep_mapping(*row);
    }
    // Stage 5: announce.
    if (!meta.publish(key, *token, row)) {
      if (row->parent) row->parent->unpin();  // this row never entered the index
      // The TTL sweeper reaped the reservation after our link(2). Register
      // what is at the path now, as the sweeper would, unless it (or a rescan)
      // already did.
      auto lock = ft->lock_key(key);
      if (!meta.find(key) && !adopt_file(*ft, key, final).ok()) {
        return fail(Cancelled("reservation expired after link"));
      }
    }
  }
  Counter c = save_counter(m.save_reason);
  if (c != Counter::kCount) counters.add(c);
  if (plan) {
    counters.add(Counter::kDeltaSaves);
    counters.add(Counter::kDeltaBytesSaved, full_payload_bytes - payload.size());
  }
  const uint64_t elapsed = timer.elapsed();
  counters.add(Counter::kPackTotalNs, elapsed);
  record_write(tier, payload.size(), elapsed);
  if (!remote_prefix.empty()) {
    if (plan) {
      remote_publish_delta(key, full_meta, plan->delta, remote_prefix, payload, crc, full_payload);
    } else {
      remote_publish(key, remote_prefix, payload);
    }
  }
  return key;
}

void Cache::Impl::record_write(Tier tier, uint64_t bytes, uint64_t ns) {
  if (bytes == 0) return;
  const double sample =
      static_cast<double>(bytes) * 1e9 / static_cast<double>(std::max<uint64_t>(ns, 1));
  std::lock_guard lock(rate_mu);
  double& rate = write_rate[static_cast<int>(tier)];
  rate = rate == 0 ? sample : 0.75 * rate + 0.25 * sample;
}

double Cache::tier_write_bytes_per_s(Tier t) const {
  std::lock_guard lock(impl_->rate_mu);
  return impl_->write_rate[static_cast<int>(t)];
}

// ---------------------------------------------------------------------------
// Cache

Cache::Cache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Cache::~Cache() = default;

Result<std::unique_ptr<Cache>> Cache::open(CacheConfig cfg) {
  HEARTH_RETURN_IF_ERROR(validate_cache_config(cfg));
  auto impl = std::make_unique<Impl>(std::move(cfg));
  HEARTH_RETURN_IF_ERROR(impl->start());
  return std::unique_ptr<Cache>(new Cache(std::move(impl)));
}

Result<CacheKey> Cache::save(Tier tier, const KvcBuildMeta& meta,
                             std::span<const uint8_t> payload) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(impl_->cfg.evict_save_timeout_ms);
  Impl::TierWriter* w = impl_->writer(tier);
  if (w == nullptr) return impl_->do_save(tier, meta, payload);  // reports the disabled tier
  if (!w->slots.acquire_until(deadline)) {
    impl_->counters.add(Counter::kSaveErrors);
    return DeadlineExceeded(std::string("save: no ") + tier_name(tier) +
                            " writer slot within evict_save_timeout_ms");
  }
  SlotGuard slot(&w->slots);
  return impl_->do_save(tier, meta, payload);
}

namespace {

// Holds an async save in the index's queued set while its job exists: the job
// releases it once do_save returns, and a job dropped unrun (queue full,
// shutdown) releases it when destroyed.
class QueuedMark {
 public:
  QueuedMark(MetaIndex* meta, const CacheKey& key) : meta_(meta), key_(key) {}
  QueuedMark(const QueuedMark&) = delete;
  QueuedMark& operator=(const QueuedMark&) = delete;
  ~QueuedMark() { meta_->dequeue(key_); }

 private:
  MetaIndex* meta_;
  CacheKey key_;
};

}  // namespace

bool Cache::save_async(Tier tier, KvcBuildMeta meta, std::vector<uint8_t> payload) {
  Impl* impl = impl_.get();
  Impl::TierWriter* w = impl->writer(tier);
  if (w == nullptr) {
    impl->counters.add(Counter::kSavesDropped);
    return false;
  }
  // In flight from now on, before a writer reserves the key: a resume lookup
  // issued right after this call waits for the row instead of missing it.
  const CacheKey key = make_key(meta.ns, meta.tokens);
  QueuedSave q;
  q.tier = tier;
  q.bytes = payload.size();
  q.n_tokens = static_cast<uint32_t>(meta.tokens.size());
  q.ns_id = meta.ns.id();
  q.fingerprint = meta.ns.fingerprint;
  impl->meta.enqueue(key, q);
  auto mark = std::make_shared<QueuedMark>(&impl->meta, key);
  auto job = [impl, w, tier, mark, m = std::move(meta), p = std::move(payload)]() mutable {
    {
      w->slots.acquire_until(std::chrono::steady_clock::time_point::max());
      SlotGuard slot(&w->slots);
      // Not adopted by the RAM tier: it copies the bytes into a slab of its own here,
      // on the writer, and the buffer goes back to the payload pool, so the model
      // worker's next pack takes memory already touched instead of faulting in fresh
      // pages while every stream waits (common/buffer_pool.h).
      (void)impl->do_save(tier, m, p);
    }
    payload_buffers().give(std::move(p));
    mark.reset();  // published or failed: no longer in flight
  };
  if (!w->pool.submit(std::move(job))) {  // the refused job took the mark with it
    impl->counters.add(Counter::kSavesDropped);
    return false;
  }
  return true;
}

void Cache::wait_idle() {
  for (auto& w : impl_->writers) {
    if (w) w->pool.wait_idle();
  }
}

bool Cache::wait_idle_for(uint64_t max_ms) {
  return impl_->meta.wait_unqueued(
      nullptr, std::chrono::steady_clock::now() + std::chrono::milliseconds(max_ms));
}

bool Cache::wait_namespace_idle(const KeyNamespace& ns, uint64_t max_ms) {
  const Digest256 id = ns.id();
  return impl_->meta.wait_unqueued(
      &id, std::chrono::steady_clock::now() + std::chrono::milliseconds(max_ms));
}

bool Cache::save_pending(const CacheKey& key) const {
  return impl_->meta.pending(key);
}

bool Cache::drop_duplicate_save(const CacheKey& key) {
  if (!impl_->meta.find(key) && !impl_->meta.pending(key)) return false;
  impl_->counters.add(Counter::kDuplicateDropped);
  return true;
}

std::optional<RowInfo> Cache::lookup_exact(const CacheKey& key, HitKind kind) {
  RowPtr r = impl_->meta.find(key);
  if (!r && impl_->remote) r = impl_->remote_pull(key);
  if (!r) {
    impl_->counters.add(Counter::kMisses);
    return std::nullopt;
  }
  impl_->touch(*r);
  impl_->counters.add(kind == HitKind::kExact ? Counter::kHitsExact : Counter::kHitsResume);
  return impl_->to_info(*r);
}

std::optional<RowInfo> Cache::lookup_exact_or_wait(const CacheKey& key, uint64_t max_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(max_ms);
  RowPtr r = impl_->meta.find(key);
  if (!r) r = impl_->meta.wait_published(key, deadline);
  if (!r && impl_->remote) r = impl_->remote_pull(key);
  if (!r) {
    impl_->counters.add(Counter::kMisses);
    return std::nullopt;
  }
  impl_->touch(*r);
  impl_->counters.add(Counter::kHitsResume);
  return impl_->to_info(*r);
}

std::optional<PrefixHit> Cache::lookup_longest_prefix(const KeyNamespace& ns,
                                                      std::span<const Token> tokens, size_t stride,
                                                      size_t min_tokens) {
  Timer timer;
  if (stride == 0) stride = impl_->cfg.policy.boundary_align_tokens;
  if (min_tokens == 0) min_tokens = impl_->cfg.policy.min_tokens;
  if (min_tokens == 0) min_tokens = 1;
  // One pass of SHA-256 over the prompt, a digest at each stride boundary
  // (and at the end), then probe from the longest down.
  std::vector<std::pair<size_t, CacheKey>> probes;
  probes.reserve(tokens.size() / stride + 1);
  KeyStream ks(ns);
  size_t done = 0;
  for (size_t n = stride; n <= tokens.size(); n += stride) {
    ks.append(tokens.subspan(done, n - done));
    done = n;
    if (n >= min_tokens) probes.emplace_back(n, ks.key());
  }
  if (done < tokens.size() && tokens.size() >= min_tokens) {
    ks.append(tokens.subspan(done));
    probes.emplace_back(tokens.size(), ks.key());
  }
  SnapshotPtr snap = impl_->meta.snapshot();
  std::optional<PrefixHit> hit;
  uint64_t n_probes = 0;
  for (auto it = probes.rbegin(); it != probes.rend(); ++it) {
    ++n_probes;
    auto f = snap->rows.find(it->second);
    if (f != snap->rows.end()) {
      impl_->touch(*f->second);
      hit = PrefixHit{impl_->to_info(*f->second), it->first};
      break;
    }
  }
  impl_->counters.add(Counter::kLongestPrefixProbes, n_probes);
  impl_->counters.add(hit ? Counter::kHitsLongestPrefix : Counter::kMisses);
  impl_->counters.add(Counter::kLongestPrefixNs, timer.elapsed());
  return hit;
}

std::optional<PrefixHit> Cache::lookup_radix(const KeyNamespace& ns, std::span<const Token> tokens,
                                             size_t min_tokens) {
  if (min_tokens == 0) min_tokens = 1;
  auto hit = impl_->radix_local(ns, tokens, min_tokens);
  if (impl_->remote) {
    // A longer prefix held by the remote tier (saved by any node) is pulled in.
    auto cand = impl_->remote_index.longest(ns.id(), tokens, hit ? hit->n_tokens : min_tokens - 1);
    if (cand && impl_->remote_pull(cand->first)) hit = impl_->radix_local(ns, tokens, min_tokens);
  }
  impl_->counters.add(hit ? Counter::kHitsRadix : Counter::kMisses);
  return hit;
}

std::optional<PrefixHit> Cache::Impl::radix_local(const KeyNamespace& ns,
                                                  std::span<const Token> tokens,
                                                  size_t min_tokens) {
  SnapshotPtr snap = meta.snapshot();
  auto root = snap->radix.find(ns.id());
  if (root == snap->radix.end()) return std::nullopt;
  auto m = radix_longest_prefix(root->second, tokens);
  if (!m || m->depth < min_tokens) return std::nullopt;
  auto f = snap->rows.find(m->key);
  if (f == snap->rows.end()) return std::nullopt;
  touch(*f->second);
  return PrefixHit{to_info(*f->second), m->depth};
}

Result<std::vector<uint8_t>> Cache::load(const CacheKey& key, KvcInfo* info) {
  HEARTH_ASSIGN_OR_RETURN(Lease lease, checkout(key));
  std::vector<uint8_t> out(lease.payload_size());
  HEARTH_RETURN_IF_ERROR(lease.read_payload(out));
  if (info) *info = lease.info();
  return out;
}

EvictResult Cache::evict_bytes(uint64_t target, std::span<const Tier> tiers) {
  return impl_->evict(target, tier_mask(tiers));
}

uint64_t Cache::gc() {
  return impl_->evict(UINT64_MAX, 0x7).rows;
}

std::vector<RowInfo> Cache::dump() const {
  // In-flight saves are read before the rows: a save that publishes in between
  // shows up as a row, and none falls between the two reads.
  std::vector<InFlightSave> in_flight = impl_->meta.in_flight();
  SnapshotPtr snap = impl_->meta.snapshot();
  std::vector<RowInfo> out;
  for (const auto& [k, r] : snap->rows) out.push_back(impl_->to_info(*r));
  std::sort(out.begin(), out.end(),
            [](const RowInfo& a, const RowInfo& b) { return a.last_used_ns < b.last_used_ns; });
  // In-flight saves last, as reserved rows.
  for (InFlightSave& f : in_flight) {
    if (snap->rows.count(f.key)) continue;
    RowInfo i;
    i.key = f.key;
    i.tier = f.tier;
    i.size = f.bytes;
    i.status = RowStatus::kReserved;
    i.location = std::move(f.path);
    i.n_tokens = f.n_tokens;
    i.fingerprint = f.fingerprint;
    out.push_back(std::move(i));
  }
  return out;
}

size_t Cache::row_count() const {
  return impl_->meta.snapshot()->rows.size();
}
Counters& Cache::counters() {
  return impl_->counters;
}
std::vector<std::pair<std::string, uint64_t>> Cache::counters_snapshot() const {
  auto out = impl_->counters.snapshot();
  impl_->remote_counters(out);
  return out;
}
void Cache::reset_counters() {
  impl_->counters.reset();
}
bool Cache::tier_enabled(Tier t) const {
  return impl_->enabled(t);
}
bool Cache::tier_degraded(Tier t) const {
  FileTier* ft = impl_->file_tier(t);
  return ft && ft->degraded();
}
Status Cache::rescan_tier(Tier t) {
  return impl_->rescan(t);
}
const CacheConfig& Cache::config() const {
  return impl_->cfg;
}
void Cache::sweep_reservations() {
  impl_->sweep();
}

}  // namespace hearth::cache
