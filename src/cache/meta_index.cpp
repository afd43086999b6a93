#include "cache/meta_index.h"

#include <algorithm>

namespace hearth::cache {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

MetaIndex::MetaIndex() { snap_.store(std::make_shared<const Snapshot>()); }

RowPtr MetaIndex::find(const CacheKey& key) const {
  SnapshotPtr s = snapshot();
  auto it = s->rows.find(key);
  return it == s->rows.end() ? nullptr : it->second;
}

std::shared_ptr<Snapshot> MetaIndex::copy_snapshot() const {
  return std::make_shared<Snapshot>(*snap_.load(std::memory_order_acquire));
}

void MetaIndex::publish_snapshot(std::shared_ptr<Snapshot> s) {
  snap_.store(std::move(s), std::memory_order_release);
}

void MetaIndex::add_row(Snapshot& s, const RowPtr& row) {
  s.rows[row->key] = row;
  if (row->tokens && !row->tokens->empty()) {
    RadixRoot& root = s.radix[row->ns_id];
    root = radix_insert(root, row->tokens, row->key);
  }
}

void MetaIndex::remove_row(Snapshot& s, const RowPtr& row) {
  s.rows.erase(row->key);
  auto it = s.radix.find(row->ns_id);
  if (it != s.radix.end() && row->tokens) {
    it->second = radix_remove(it->second, *row->tokens, row->key);
    if (!it->second) s.radix.erase(it);
  }
}

void MetaIndex::account(const Row& row, bool added) {
  int t = static_cast<int>(row.tier);
  if (added) {
    rows_[t].fetch_add(1);
  } else {
    rows_[t].fetch_sub(1);
    bytes_[t].fetch_sub(row.size);
    // A delta row leaving the index gives back the pin it held on its parent.
    if (row.parent) row.parent->unpin();
  }
  if (on_change) on_change(row, added);
}

Result<uint64_t> MetaIndex::reserve(const CacheKey& key, Tier tier, uint64_t bytes,
                                    uint64_t ttl_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  if (snapshot()->rows.count(key)) return AlreadyExists("key already published");
  if (reservations_.count(key)) return AlreadyExists("key is being saved by another writer");
  Reservation r;
  r.token = next_token_++;
  r.tier = tier;
  r.bytes = bytes;
  r.expires = std::chrono::steady_clock::now() + std::chrono::milliseconds(ttl_ms);
  reservations_[key] = r;
  bytes_[static_cast<int>(tier)].fetch_add(bytes);
  return r.token;
}

bool MetaIndex::check(const CacheKey& key, uint64_t token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = reservations_.find(key);
  return it != reservations_.end() && it->second.token == token;
}

bool MetaIndex::mark_post_link(const CacheKey& key, uint64_t token, const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = reservations_.find(key);
  if (it == reservations_.end() || it->second.token != token) return false;
  it->second.stage = ReserveStage::kPostLink;
  it->second.path = path;
  return true;
}

bool MetaIndex::publish(const CacheKey& key, uint64_t token, RowPtr row) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = reservations_.find(key);
    if (it == reservations_.end() || it->second.token != token) return false;
    int t = static_cast<int>(it->second.tier);
    // Swap the reserved byte estimate for the row's real size.
    bytes_[t].fetch_sub(it->second.bytes);
    bytes_[t].fetch_add(row->size);
    reservations_.erase(it);
    auto s = copy_snapshot();
    add_row(*s, row);
    publish_snapshot(std::move(s));
    account(*row, true);
  }
  published_cv_.notify_all();
  return true;
}

void MetaIndex::cancel(const CacheKey& key, uint64_t token) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = reservations_.find(key);
    if (it == reservations_.end() || it->second.token != token) return;
    bytes_[static_cast<int>(it->second.tier)].fetch_sub(it->second.bytes);
    reservations_.erase(it);
  }
  published_cv_.notify_all();
}

bool MetaIndex::insert_available(RowPtr row) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (snapshot()->rows.count(row->key) || reservations_.count(row->key)) return false;
    auto s = copy_snapshot();
    add_row(*s, row);
    publish_snapshot(std::move(s));
    bytes_[static_cast<int>(row->tier)].fetch_add(row->size);
    account(*row, true);
  }
  published_cv_.notify_all();
  return true;
}

std::vector<RowPtr> MetaIndex::remove_rows(const std::vector<RowPtr>& rows) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RowPtr> removed;
  std::shared_ptr<Snapshot> s;
  for (const auto& r : rows) {
    auto cur = snapshot();
    auto it = cur->rows.find(r->key);
    if (it == cur->rows.end() || it->second != r) continue;
    if (!r->try_kill()) continue;  // pinned by a reader
    if (!s) s = copy_snapshot();
    remove_row(*s, r);
    removed.push_back(r);
  }
  if (s) publish_snapshot(std::move(s));
  for (const auto& r : removed) account(*r, false);
  return removed;
}

RowPtr MetaIndex::drop(const CacheKey& key, const RowPtr& expected) {
  std::lock_guard<std::mutex> lock(mu_);
  auto cur = snapshot();
  auto it = cur->rows.find(key);
  if (it == cur->rows.end()) return nullptr;
  if (expected && it->second != expected) return nullptr;
  RowPtr r = it->second;
  r->pin.fetch_or(Row::kDead, std::memory_order_acq_rel);
  auto s = copy_snapshot();
  remove_row(*s, r);
  publish_snapshot(std::move(s));
  account(*r, false);
  return r;
}

std::vector<std::pair<CacheKey, Reservation>> MetaIndex::take_expired() {
  std::vector<std::pair<CacheKey, Reservation>> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = std::chrono::steady_clock::now();
    for (auto it = reservations_.begin(); it != reservations_.end();) {
      if (it->second.expires <= now) {
        bytes_[static_cast<int>(it->second.tier)].fetch_sub(it->second.bytes);
        out.emplace_back(it->first, it->second);
        it = reservations_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (!out.empty()) published_cv_.notify_all();
  return out;
}

RowPtr MetaIndex::wait_published(const CacheKey& key,
                                 std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (RowPtr r = find(key)) return r;
    if (!reservations_.count(key) && !queued_.count(key)) return nullptr;
    if (published_cv_.wait_until(lock, deadline) == std::cv_status::timeout) return find(key);
  }
}

bool MetaIndex::claims_path(const CacheKey& key, Tier tier) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (RowPtr r = find(key); r && r->tier == tier) return true;
  auto it = reservations_.find(key);
  return it != reservations_.end() && it->second.tier == tier &&
         it->second.stage == ReserveStage::kPostLink;
}

bool MetaIndex::reserved(const CacheKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return reservations_.count(key) > 0;
}

std::vector<std::pair<CacheKey, Reservation>> MetaIndex::reservations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {reservations_.begin(), reservations_.end()};
}

void MetaIndex::enqueue(const CacheKey& key, const QueuedSave& q) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = queued_.try_emplace(key, q);
  if (!inserted) it->second.count++;
}

void MetaIndex::dequeue(const CacheKey& key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = queued_.find(key);
    if (it == queued_.end()) return;
    if (--it->second.count == 0) queued_.erase(it);
  }
  published_cv_.notify_all();
}

bool MetaIndex::pending(const CacheKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return !find(key) && (reservations_.count(key) || queued_.count(key));
}

bool MetaIndex::wait_unqueued(const Digest256* ns_id,
                              std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return published_cv_.wait_until(lock, deadline, [&] {
    if (!ns_id) return queued_.empty();
    for (const auto& [k, q] : queued_) {
      if (q.ns_id == *ns_id) return false;
    }
    return true;
  });
}

std::vector<InFlightSave> MetaIndex::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<InFlightSave> out;
  out.reserve(reservations_.size() + queued_.size());
  for (const auto& [k, res] : reservations_) {
    InFlightSave f;
    f.key = k;
    f.tier = res.tier;
    f.bytes = res.bytes;
    f.path = res.path;
    if (auto q = queued_.find(k); q != queued_.end()) {
      f.n_tokens = q->second.n_tokens;
      f.fingerprint = q->second.fingerprint;
    }
    out.push_back(std::move(f));
  }
  for (const auto& [k, q] : queued_) {
    if (reservations_.count(k)) continue;
    InFlightSave f;
    f.key = k;
    f.tier = q.tier;
    f.bytes = q.bytes;
    f.n_tokens = q.n_tokens;
    f.fingerprint = q.fingerprint;
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<RowPtr> MetaIndex::lru_candidates(uint32_t tier_mask) const {
  SnapshotPtr s = snapshot();
  std::vector<std::pair<uint64_t, RowPtr>> v;
  v.reserve(s->rows.size());
  for (const auto& [k, r] : s->rows) {
    if (!(tier_mask & (1u << static_cast<int>(r->tier)))) continue;
    if (r->pin.load(std::memory_order_acquire) != 0) continue;
    v.emplace_back(r->last_used_ns.load(std::memory_order_relaxed), r);
  }
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second->key < b.second->key;
  });
  std::vector<RowPtr> out;
  out.reserve(v.size());
  for (auto& p : v) out.push_back(std::move(p.second));
  return out;
}

}  // namespace hearth::cache
