#include "cache/remote_tier.h"

#include <cstring>
#include <random>
#include <sstream>

#include "cache/crc32c.h"
#include "hearth/sha256.h"

namespace hearth::cache {

namespace {

constexpr uint32_t kFirstBackoffMs = 100;

std::string nonce() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

std::string meta_value(uint64_t size, std::span<const uint8_t> prefix) {
  std::string v(8, '\0');
  for (int i = 0; i < 8; ++i) v[i] = static_cast<char>((size >> (8 * i)) & 0xff);
  v.append(reinterpret_cast<const char*>(prefix.data()), prefix.size());
  return v;
}

Result<RemoteRowMeta> parse_meta_value(std::string_view hex, std::string_view v) {
  auto key = digest_from_hex(hex);
  if (!key.ok()) return key.status();
  if (v.size() < 8) return DataLoss("remote index: entry for " + std::string(hex) + " too short");
  RemoteRowMeta m;
  m.key = *key;
  for (int i = 0; i < 8; ++i)
    m.size |= static_cast<uint64_t>(static_cast<uint8_t>(v[i])) << (8 * i);
  auto prefix =
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()) + 8, v.size() - 8);
  auto info = kvc_parse_meta(prefix, m.size);
  if (!info.ok()) return info.status();
  if (info->key() != m.key) {
    return DataLoss("remote index: entry for " + std::string(hex) + " does not replay to its key");
  }
  m.info = std::move(*info);
  return m;
}

struct Manifest {
  std::string id;
  uint64_t n_chunks = 0;
  uint64_t size = 0;
};

// "KVR1 <nonce> <n_chunks> <bytes>". Lenient: enough to name the chunks (a nonce and
// a count), for deleting a damaged row; the magic and size may be wrong.
std::optional<Manifest> parse_manifest(const std::string& text, bool lenient = false) {
  std::istringstream in(text);
  std::string magic;
  Manifest m;
  in >> magic >> m.id >> m.n_chunks;
  const bool named = !in.fail() && !m.id.empty() && m.n_chunks > 0 && m.n_chunks <= (1u << 20);
  if (lenient) return named ? std::optional(m) : std::nullopt;
  in >> m.size;
  std::string rest;
  if (magic != "KVR1" || !named || in.fail() || m.size == 0 || (in >> rest, !rest.empty()))
    return std::nullopt;
  return m;
}

}  // namespace

Status validate_remote_tier_config(const RemoteTierConfig& c) {
  if (c.url.empty()) return OkStatus();
  auto u = parse_redis_url(c.url);
  if (!u.ok()) return InvalidArgument("remote.url: " + u.status().message());
  if (c.chunk_bytes < 4096 || c.chunk_bytes > (512ull << 20)) {
    return InvalidArgument("remote.chunk_bytes " + std::to_string(c.chunk_bytes) +
                           " must be in [4096, 536870912]");
  }
  if (c.timeout_ms == 0) return InvalidArgument("remote.timeout_ms must be > 0");
  if (c.pool_size == 0) return InvalidArgument("remote.pool_size must be > 0");
  if (c.backoff_max_ms < kFirstBackoffMs) {
    return InvalidArgument("remote.backoff_max_ms " + std::to_string(c.backoff_max_ms) +
                           " must be >= 100");
  }
  if (c.key_prefix.empty()) return InvalidArgument("remote.key_prefix must not be empty");
  if (c.index_poll_ms == 0) return InvalidArgument("remote.index_poll_ms must be > 0");
  return OkStatus();
}

Result<std::unique_ptr<RemoteTier>> RemoteTier::open(RemoteTierConfig cfg) {
  HEARTH_RETURN_IF_ERROR(validate_remote_tier_config(cfg));
  if (cfg.url.empty()) return InvalidArgument("remote.url is empty: the remote tier is off");
  auto url = parse_redis_url(cfg.url);
  if (!url.ok()) return url.status();
  std::unique_ptr<RemoteTier> t(new RemoteTier(std::move(cfg), *url));
  // Probe once so a down Redis shows as degraded from the start.
  (void)t->with_conn([](RedisClient& c) { return c.command({"PING"}); });
  return t;
}

RemoteTier::~RemoteTier() = default;

std::string RemoteTier::k(std::string_view kind, const std::string& hex) const {
  return std::string(cfg_.key_prefix).append(kind).append(hex);
}

std::string RemoteTier::chunk_key(const std::string& hex, const std::string& id, uint64_t i) const {
  return k("chunk:", hex).append(":").append(id).append(":").append(std::to_string(i));
}

Result<std::unique_ptr<RedisClient>> RemoteTier::take(bool* skipped) {
  {
    std::lock_guard lock(mu_);
    if (degraded_.load() && std::chrono::steady_clock::now() < retry_at_) {
      skipped_.fetch_add(1);
      *skipped = true;
      return Unavailable("remote tier degraded: " + url_.to_string() + " (retrying later)");
    }
    if (!pool_.empty()) {
      auto c = std::move(pool_.back());
      pool_.pop_back();
      return c;
    }
  }
  return RedisClient::connect(url_, cfg_.timeout_ms);
}

void RemoteTier::give(std::unique_ptr<RedisClient> c) {
  if (c->broken()) return;
  std::lock_guard lock(mu_);
  if (pool_.size() < cfg_.pool_size) pool_.push_back(std::move(c));
}

void RemoteTier::note_failure() {
  errors_.fetch_add(1);
  std::lock_guard lock(mu_);
  pool_.clear();  // a restarted server: every pooled connection is stale
  backoff_ms_ = backoff_ms_ == 0 ? kFirstBackoffMs : std::min(backoff_ms_ * 2, cfg_.backoff_max_ms);
  retry_at_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(backoff_ms_);
  degraded_.store(true);
}

void RemoteTier::note_success() {
  if (!degraded_.load()) return;
  std::lock_guard lock(mu_);
  if (degraded_.exchange(false)) recoveries_.fetch_add(1);
  backoff_ms_ = 0;
}

template <typename Fn>
auto RemoteTier::with_conn(Fn&& fn) -> decltype(fn(std::declval<RedisClient&>())) {
  bool skipped = false;
  auto c = take(&skipped);
  if (!c.ok()) {
    if (!skipped) note_failure();
    return c.status();
  }
  auto r = fn(**c);
  if (r.ok()) {
    note_success();
  } else {
    note_failure();
  }
  give(std::move(*c));
  return r;
}

Result<RemoteTier::Publish> RemoteTier::publish(const CacheKey& key, std::span<const uint8_t> row) {
  auto info = kvc_parse(row, key);
  if (!info.ok()) return info.status();
  return publish(key, row.subspan(0, info->payload_offset), row.subspan(info->payload_offset));
}

Result<RemoteTier::Publish> RemoteTier::publish(const CacheKey& key,
                                                std::span<const uint8_t> prefix,
                                                std::span<const uint8_t> payload) {
  const uint64_t total = prefix.size() + payload.size();
  auto info = kvc_parse_meta(prefix, total);
  if (!info.ok()) return info.status();
  if (info->key() != key)
    return InvalidArgument("remote publish: the row's tokens do not replay to its key");
  if (crc32c(payload.data(), payload.size()) != info->payload_crc32c) {
    return DataLoss("remote publish: payload CRC32C mismatch");
  }
  const std::string hex = to_hex(key);
  const std::string id = nonce();
  const uint64_t n_chunks = (total + cfg_.chunk_bytes - 1) / cfg_.chunk_bytes;
  const std::string ttl = std::to_string(cfg_.ttl_s);
  auto with_ttl = [&](std::vector<std::string> cmd) {
    if (cfg_.ttl_s > 0) {
      cmd.push_back("EX");
      cmd.push_back(ttl);
    }
    return cmd;
  };
  std::vector<std::vector<std::string>> sets;
  std::vector<std::string> chunk_keys;
  for (uint64_t i = 0; i < n_chunks; ++i) {
    const uint64_t off = i * cfg_.chunk_bytes;
    const uint64_t len = std::min<uint64_t>(cfg_.chunk_bytes, total - off);
    chunk_keys.push_back(chunk_key(hex, id, i));
    std::string data;
    data.reserve(len);
    for (uint64_t at = off; at < off + len;) {  // the chunk may straddle prefix | payload
      const bool in_prefix = at < prefix.size();
      const uint8_t* src = in_prefix ? prefix.data() + at : payload.data() + (at - prefix.size());
      const uint64_t avail = in_prefix ? prefix.size() - at : total - at;
      const uint64_t n = std::min(avail, off + len - at);
      data.append(reinterpret_cast<const char*>(src), n);
      at += n;
    }
    sets.push_back(with_ttl({"SET", chunk_keys.back(), std::move(data)}));
  }
  const std::string manifest =
      "KVR1 " + id + " " + std::to_string(n_chunks) + " " + std::to_string(total);
  auto chunk_dels = [&] {
    std::vector<std::vector<std::string>> dels;
    for (const auto& ck : chunk_keys) dels.push_back({"DEL", ck});
    return dels;
  };
  auto r = with_conn([&](RedisClient& c) -> Result<Publish> {
    // Already published (by any node): adopt without uploading the chunks again.
    auto exists = c.command({"EXISTS", k("row:", hex)});
    if (!exists.ok()) return exists.status();
    if (exists->integer == 1) return Publish::kAdopted;
    auto s = c.pipeline(sets);
    if (!s.ok()) {
      // E.g. -OOM from a full Redis part way: the chunks already stored are freed
      // (DEL is allowed when full) unless the connection itself is gone.
      if (!c.broken()) (void)c.pipeline(chunk_dels());
      return s.status();
    }
    const std::string row_key = k("row:", hex);
    std::vector<std::string_view> nx{"SET", row_key, manifest, "NX"};
    if (cfg_.ttl_s > 0) {
      nx.push_back("EX");
      nx.push_back(ttl);
    }
    auto won = c.command(std::span<const std::string_view>(nx));
    if (!won.ok()) return won.status();
    if (won->is_nil()) {
      auto d = c.pipeline(chunk_dels());
      if (!d.ok()) return d.status();
      return Publish::kAdopted;
    }
    const std::string meta = meta_value(total, prefix);
    std::vector<std::vector<std::string>> index{{"HSET", cfg_.key_prefix + "meta", hex, meta},
                                                {"XADD", cfg_.key_prefix + "index", "MAXLEN", "~",
                                                 "100000", "*", "key", hex, "meta", meta}};
    auto x = c.pipeline(index);
    if (!x.ok()) return x.status();
    return Publish::kWon;
  });
  if (!r.ok()) return r.status();
  if (*r == Publish::kWon) {
    publishes_.fetch_add(1);
    bytes_stored_.fetch_add(total);
    if (info->delta) delta_publishes_.fetch_add(1);
  } else {
    publish_lost_.fetch_add(1);
  }
  return r;
}

std::optional<std::vector<uint8_t>> RemoteTier::fetch(const CacheKey& key, Fetch* outcome,
                                                      std::string* manifest_out) {
  const std::string hex = to_hex(key);
  std::string manifest;  // as read: what delete_corrupt compares against
  bool incomplete = false;
  auto r = with_conn([&](RedisClient& c) -> Result<std::vector<uint8_t>> {
    auto m = c.command({"GET", k("row:", hex)});
    if (!m.ok()) return m.status();
    std::vector<uint8_t> bytes;
    if (m->is_nil()) return bytes;
    manifest = m->str;
    const auto parsed = parse_manifest(manifest);
    if (!parsed) {
      incomplete = true;
      return bytes;
    }
    std::vector<std::vector<std::string>> gets;
    for (uint64_t i = 0; i < parsed->n_chunks; ++i)
      gets.push_back({"GET", chunk_key(hex, parsed->id, i)});
    auto chunks = c.pipeline(gets);
    if (!chunks.ok()) return chunks.status();
    bytes.reserve(parsed->size);
    for (const auto& ch : *chunks) {
      if (ch.is_nil()) {
        incomplete = true;
        bytes.clear();
        return bytes;
      }
      bytes.insert(bytes.end(), ch.str.begin(), ch.str.end());
    }
    if (bytes.size() != parsed->size) {
      incomplete = true;
      bytes.clear();
    }
    return bytes;
  });
  Fetch got = Fetch::kHit;
  if (!r.ok()) {
    got = Fetch::kUnavailable;  // counted as an error or a skip
  } else if (incomplete || (!r->empty() && !kvc_parse(*r, key).ok())) {
    got = Fetch::kCorrupt;
  } else if (r->empty()) {
    got = Fetch::kMiss;
  }
  if (outcome != nullptr) *outcome = got;
  if (manifest_out != nullptr) *manifest_out = manifest;
  switch (got) {
    case Fetch::kHit:
      hits_.fetch_add(1);
      return std::move(*r);
    case Fetch::kMiss:
      misses_.fetch_add(1);
      break;
    case Fetch::kCorrupt:
      corrupt_.fetch_add(1);
      delete_corrupt(key, manifest);
      break;
    case Fetch::kUnavailable:
      break;
  }
  return std::nullopt;
}

bool RemoteTier::delete_corrupt(const CacheKey& key, const std::string& manifest) {
  const std::string hex = to_hex(key);
  // One script, so the compare and the deletes are atomic: a good row another node
  // published under the key since this one was read is never removed.
  static constexpr std::string_view kScript =
      "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end "
      "redis.call('HDEL', KEYS[2], ARGV[2]) "
      "for i = 1, #KEYS do if i ~= 2 then redis.call('DEL', KEYS[i]) end end "
      "return 1";
  std::vector<std::string> cmd = {"EVAL", std::string(kScript), "", k("row:", hex),
                                  cfg_.key_prefix + "meta"};
  // The chunks, when the manifest still names them (a mangled one may not).
  if (const auto parsed = parse_manifest(manifest, /*lenient=*/true)) {
    for (uint64_t i = 0; i < parsed->n_chunks; ++i) cmd.push_back(chunk_key(hex, parsed->id, i));
  }
  cmd[2] = std::to_string(cmd.size() - 3);
  cmd.push_back(manifest);
  cmd.push_back(hex);
  auto r = with_conn([&](RedisClient& c) { return c.pipeline({cmd}); });
  if (!r.ok() || r->empty() || (*r)[0].integer != 1) return false;
  corrupt_deleted_.fetch_add(1);
  return true;
}

std::optional<uint32_t> RemoteTier::touch_row(const CacheKey& key) {
  const std::string hex = to_hex(key);
  auto r = with_conn([&](RedisClient& c) -> Result<std::optional<uint32_t>> {
    const std::string row_key = k("row:", hex);
    auto got = c.pipeline({{"GET", row_key}, {"HGET", cfg_.key_prefix + "meta", hex}});
    if (!got.ok()) return got.status();
    if ((*got)[0].is_nil() || (*got)[1].is_nil()) return std::optional<uint32_t>();
    const auto parsed = parse_manifest((*got)[0].str);
    auto m = parse_meta_value(hex, (*got)[1].str);
    if (!parsed || !m.ok()) return std::optional<uint32_t>();
    // TOUCH / EXPIRE answer how many keys exist: all chunks must still be there.
    std::vector<std::vector<std::string>> cmds;
    const std::string ttl = std::to_string(cfg_.ttl_s);
    cmds.push_back(cfg_.ttl_s > 0 ? std::vector<std::string>{"EXPIRE", row_key, ttl}
                                  : std::vector<std::string>{"TOUCH", row_key});
    for (uint64_t i = 0; i < parsed->n_chunks; ++i) {
      const std::string ck = chunk_key(hex, parsed->id, i);
      cmds.push_back(cfg_.ttl_s > 0 ? std::vector<std::string>{"EXPIRE", ck, ttl}
                                    : std::vector<std::string>{"TOUCH", ck});
    }
    auto t = c.pipeline(cmds);
    if (!t.ok()) return t.status();
    for (const auto& reply : *t) {
      if (reply.integer != 1) return std::optional<uint32_t>();
    }
    return std::optional<uint32_t>(m->info.delta ? m->info.delta->depth : 0);
  });
  if (!r.ok()) return std::nullopt;
  return *r;
}

Result<std::vector<RemoteRowMeta>> RemoteTier::scan_index() {
  return with_conn([&](RedisClient& c) -> Result<std::vector<RemoteRowMeta>> {
    std::vector<RemoteRowMeta> out;
    std::string cursor = "0";
    const std::string hash = cfg_.key_prefix + "meta";
    do {
      auto r = c.command({"HSCAN", hash, cursor, "COUNT", "256"});
      if (!r.ok()) return r.status();
      if (r->elements.size() != 2) return DataLoss("remote index: bad HSCAN reply");
      cursor = r->elements[0].str;
      const auto& kv = r->elements[1].elements;
      for (size_t i = 0; i + 1 < kv.size(); i += 2) {
        auto m = parse_meta_value(kv[i].str, kv[i + 1].str);
        if (m.ok()) out.push_back(std::move(*m));  // a damaged entry is skipped
      }
    } while (cursor != "0");
    return out;
  });
}

Result<std::vector<RemoteRowMeta>> RemoteTier::read_index(std::string* last_id) {
  return with_conn([&](RedisClient& c) -> Result<std::vector<RemoteRowMeta>> {
    std::vector<RemoteRowMeta> out;
    const std::string stream = cfg_.key_prefix + "index";
    auto r = c.command({"XREAD", "COUNT", "1024", "STREAMS", stream, *last_id});
    if (!r.ok()) return r.status();
    if (r->is_nil() || r->elements.empty()) return out;
    // [[stream, [[id, [f, v, f, v]], ...]]]
    const auto& entries = r->elements[0].elements.size() == 2 ? r->elements[0].elements[1].elements
                                                              : r->elements[0].elements;
    for (const auto& e : entries) {
      if (e.elements.size() != 2) continue;
      *last_id = e.elements[0].str;
      const auto& f = e.elements[1].elements;
      std::string hex, meta;
      for (size_t i = 0; i + 1 < f.size(); i += 2) {
        if (f[i].str == "key") hex = f[i + 1].str;
        if (f[i].str == "meta") meta = f[i + 1].str;
      }
      auto m = parse_meta_value(hex, meta);
      if (m.ok()) out.push_back(std::move(*m));
    }
    return out;
  });
}

RemoteCounters RemoteTier::counters() const {
  RemoteCounters c;
  c.publishes = publishes_.load();
  c.publish_lost = publish_lost_.load();
  c.bytes_stored = bytes_stored_.load();
  c.delta_publishes = delta_publishes_.load();
  c.chain_broken = chain_broken_.load();
  c.hits = hits_.load();
  c.misses = misses_.load();
  c.corrupt = corrupt_.load();
  c.corrupt_deleted = corrupt_deleted_.load();
  c.errors = errors_.load();
  c.skipped = skipped_.load();
  c.degraded = degraded_.load() ? 1 : 0;
  c.recoveries = recoveries_.load();
  return c;
}

}  // namespace hearth::cache
