#include "cache/file_tier.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>

#include "cache/crc32c.h"

namespace hearth::cache {
namespace {

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Closes an fd on scope exit.
struct FdGuard {
  CacheIo* io;
  int fd;
  ~FdGuard() {
    if (fd >= 0) io->close(fd);
  }
};

Status write_full(CacheIo& io, int fd, const uint8_t* p, size_t n, uint64_t off,
                  const std::string& path) {
  while (n > 0) {
    size_t chunk = std::min<size_t>(n, 64u << 20);
    ssize_t w = io.pwrite(fd, p, chunk, off);
    if (w < 0) return IoError("write " + path + ": " + std::strerror(static_cast<int>(-w)));
    if (w == 0) return IoError("write " + path + ": wrote 0 bytes");
    p += w;
    n -= static_cast<size_t>(w);
    off += static_cast<uint64_t>(w);
  }
  return OkStatus();
}

// Owner of a temp file named <hex key>.kvc.<pid>.<token>.tmp (see write_tmp).
struct TmpOwner {
  CacheKey key;
  long pid;
  uint64_t token;
};

std::optional<TmpOwner> parse_tmp_name(const std::string& name) {
  constexpr size_t kHex = 64;
  const std::string_view mid = ".kvc.";
  if (name.size() < kHex + mid.size() || name.compare(kHex, mid.size(), mid) != 0) {
    return std::nullopt;
  }
  auto key = digest_from_hex(std::string_view(name).substr(0, kHex));
  if (!key.ok()) return std::nullopt;
  TmpOwner o{*key, 0, 0};
  if (std::sscanf(name.c_str() + kHex + mid.size(), "%ld.%" SCNu64 ".tmp", &o.pid, &o.token) != 2) {
    return std::nullopt;
  }
  return o;
}

}  // namespace

Status read_full(CacheIo& io, int fd, void* dst, size_t n, uint64_t off) {
  auto* p = static_cast<uint8_t*>(dst);
  while (n > 0) {
    ssize_t r = io.pread(fd, p, n, off);
    if (r < 0) return IoError(std::string("read: ") + std::strerror(static_cast<int>(-r)));
    if (r == 0) return DataLoss("read: unexpected end of file");
    p += r;
    n -= static_cast<size_t>(r);
    off += static_cast<uint64_t>(r);
  }
  return OkStatus();
}

FileTier::FileTier(Tier tier, std::string dir, std::shared_ptr<CacheIo> io)
    : tier_(tier), dir_(std::move(dir)), io_(std::move(io)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
}

std::string FileTier::final_path(const CacheKey& key) const {
  return dir_ + "/" + to_hex(key) + ".kvc";
}

FileTier::~FileTier() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

Status FileTier::io_error(const char* what, const std::string& path, int neg_errno, Path which) {
  if (which == Path::kWrite) {
    set_writes_degraded();
  } else {
    set_degraded(true);
  }
  return IoError(std::string(what) + " " + path + ": " + std::strerror(-neg_errno));
}

Status FileTier::claim_dir() {
  std::vector<std::string> names;
  const int listed = io_->list_dir(dir_, &names);
  if (listed == -ENOENT) {
    // mkdir -p: components we create are 0700; existing parents are left alone.
    names.clear();
    size_t pos = 0;
    while (pos != std::string::npos) {
      pos = dir_.find('/', pos + 1);
      const std::string cur = dir_.substr(0, pos);
      if (cur.empty()) continue;
      const int r = io_->mkdir(cur, 0700);
      if (r < 0 && r != -EEXIST) return IoError("mkdir " + cur + ": " + std::strerror(-r));
    }
  } else if (listed < 0) {
    return IoError("cannot list cache directory " + dir_ + ": " + std::strerror(-listed));
  }
  if (lock_fd_ >= 0) return OkStatus();  // claimed at open; a rescan only re-creates it
  const std::string marker = dir_ + "/" + kMarkerName;
  const bool marked = std::find(names.begin(), names.end(), kMarkerName) != names.end();
  if (!marked && !names.empty()) {
    return InvalidArgument("cache directory " + dir_ + " is not empty and holds no " +
                           kMarkerName + " marker: hearth uses only an empty directory or one "
                           "it created (it would delete files it did not write)");
  }
  const int fd = ::open(marker.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return IoError("cannot open " + marker + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Unavailable("cache directory " + dir_ + " is in use by another hearth process (" +
                         marker + " is locked)");
    }
    return IoError("cannot lock " + marker + ": " + std::strerror(err));
  }
  lock_fd_ = fd;
  const std::string note = "hearth KV cache directory (tier " + std::string(tier_name(tier_)) +
                           "); locked by pid " + std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) == 0) {
    (void)!::pwrite(fd, note.data(), note.size(), 0);
  }
  return OkStatus();
}

Result<std::string> FileTier::write_tmp(const CacheKey& key, uint64_t token,
                                        std::span<const uint8_t> prefix,
                                        std::span<const uint8_t> payload) {
  std::string tmp = final_path(key) + "." + std::to_string(::getpid()) + "." +
                    std::to_string(token) + ".tmp";
  int fd = io_->open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return io_error("open", tmp, fd, Path::kWrite);
  FdGuard guard{io_.get(), fd};
  Status s = write_full(*io_, fd, prefix.data(), prefix.size(), 0, tmp);
  if (s.ok()) s = write_full(*io_, fd, payload.data(), payload.size(), prefix.size(), tmp);
  if (s.ok()) {
    int r = io_->fdatasync(fd);
    if (r < 0) s = IoError("fdatasync " + tmp + ": " + std::strerror(-r));
  }
  if (!s.ok()) {
    set_writes_degraded();  // a full disk: saves wait for a rescan, rows stay readable
    io_->unlink(tmp);
    return s;
  }
  return tmp;
}

Status FileTier::fsync_dir() {
  int fd = io_->open(dir_, O_RDONLY | O_DIRECTORY, 0);
  if (fd < 0) return io_error("open dir", dir_, fd, Path::kWrite);
  FdGuard guard{io_.get(), fd};
  int r = io_->fsync(fd);
  if (r < 0) return io_error("fsync dir", dir_, r, Path::kWrite);
  return OkStatus();
}

Result<LinkOutcome> FileTier::link_publish(const std::string& tmp, const CacheKey& key,
                                           uint64_t expected_size) {
  std::string final = final_path(key);
  LinkOutcome outcome = LinkOutcome::kLinked;
  int r = io_->link(tmp, final);
  if (r == -EEXIST) {
    // Never skip EEXIST: the file there is either a good copy of this row left
    // by a writer that died before announcing it (adopt), or junk (replace).
    bool valid = false;
    auto meta = read_meta(final);
    if (meta.ok() && meta->size == expected_size && meta->info.key() == key) {
      valid = verify(final, key).ok();
    }
    if (valid) {
      outcome = LinkOutcome::kAdoptedExisting;
    } else {
      int u = io_->unlink(final);
      if (u < 0 && u != -ENOENT) {
        io_->unlink(tmp);
        return io_error("unlink", final, u, Path::kWrite);
      }
      r = io_->link(tmp, final);
      outcome = LinkOutcome::kReplacedExisting;
    }
  }
  if (outcome != LinkOutcome::kAdoptedExisting && r < 0) {
    io_->unlink(tmp);
    return io_error("link", final, r, Path::kWrite);
  }
  Status s = fsync_dir();
  io_->unlink(tmp);
  if (!s.ok()) return s;
  return outcome;
}

void FileTier::remove_quietly(const std::string& path) { io_->unlink(path); }

Result<ScannedFile> FileTier::read_meta(const std::string& path) {
  int fd = io_->open(path, O_RDONLY, 0);
  if (fd < 0) {
    if (fd == -ENOENT) return NotFound("no file " + path);
    return io_error("open", path, fd);
  }
  FdGuard guard{io_.get(), fd};
  ScannedFile out;
  out.path = path;
  int r = io_->fstat_size(fd, &out.size);
  if (r < 0) return io_error("fstat", path, r);
  uint8_t fixed[kKvcHeaderSize + kKvcTrailerSize];
  if (out.size < sizeof(fixed)) return DataLoss("kvc: " + path + " shorter than header");
  HEARTH_RETURN_IF_ERROR(read_full(*io_, fd, fixed, sizeof(fixed), 0));
  HEARTH_ASSIGN_OR_RETURN(uint64_t prefix_len, kvc_prefix_length({fixed, sizeof(fixed)}));
  if (prefix_len > out.size) return DataLoss("kvc: " + path + " truncated before payload");
  std::vector<uint8_t> prefix(prefix_len);
  std::memcpy(prefix.data(), fixed, sizeof(fixed));
  HEARTH_RETURN_IF_ERROR(read_full(*io_, fd, prefix.data() + sizeof(fixed),
                                   prefix_len - sizeof(fixed), sizeof(fixed)));
  HEARTH_ASSIGN_OR_RETURN(out.info, kvc_parse_meta(prefix, out.size));
  return out;
}

Status FileTier::verify(const std::string& path, const CacheKey& key) {
  HEARTH_ASSIGN_OR_RETURN(ScannedFile meta, read_meta(path));
  if (meta.info.key() != key) return DataLoss("kvc: key replay mismatch in " + path);
  int fd = io_->open(path, O_RDONLY, 0);
  if (fd < 0) return io_error("open", path, fd);
  FdGuard guard{io_.get(), fd};
  // Stream the payload through the CRC in 4 MiB chunks.
  std::vector<uint8_t> buf(std::min<uint64_t>(meta.info.payload_length, 4u << 20));
  uint32_t crc = 0;
  uint64_t off = meta.info.payload_offset, left = meta.info.payload_length;
  while (left > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
    HEARTH_RETURN_IF_ERROR(read_full(*io_, fd, buf.data(), n, off));
    crc = crc32c_extend(crc, buf.data(), n);
    off += n;
    left -= n;
  }
  if (crc != meta.info.payload_crc32c) return DataLoss("kvc: payload crc32c mismatch in " + path);
  return OkStatus();
}

Result<std::vector<ScannedFile>> FileTier::scan(uint64_t* removed_tmp, uint64_t* removed_bad,
                                                const InFlight& in_flight) {
  std::vector<std::string> names;
  int r = io_->list_dir(dir_, &names);
  if (r < 0) return io_error("list", dir_, r);
  std::vector<ScannedFile> out;
  for (const auto& name : names) {
    std::string path = dir_ + "/" + name;
    if (ends_with(name, ".tmp")) {
      // A temp file of a save still under way in this process is its writer's
      // to remove; the lock waits out a writer inside stages 3-4.
      auto owner = parse_tmp_name(name);
      std::unique_lock<std::mutex> lock;
      if (owner && in_flight && owner->pid == ::getpid()) {
        lock = lock_key(owner->key);
        if (in_flight(owner->key, owner->token)) continue;
      }
      io_->unlink(path);
      if (removed_tmp) ++*removed_tmp;
      continue;
    }
    if (!ends_with(name, ".kvc")) continue;
    auto key = digest_from_hex(std::string_view(name).substr(0, name.size() - 4));
    auto meta = read_meta(path);
    if (meta.status().code() == ErrorCode::kIo) return meta.status();
    if (!key.ok()) {
      io_->unlink(path);
      if (removed_bad) ++*removed_bad;
      continue;
    }
    if (!meta.ok() || meta->info.key() != *key) {
      // Judge again under the key's lock: a writer may have replaced the junk
      // with its row (EEXIST replace) since the first read.
      auto lock = lock_key(*key);
      meta = read_meta(path);
      if (meta.status().code() == ErrorCode::kIo) return meta.status();
      if (meta.status().code() == ErrorCode::kNotFound) continue;
      if (!meta.ok() || meta->info.key() != *key) {
        io_->unlink(path);
        if (removed_bad) ++*removed_bad;
        continue;
      }
    }
    out.push_back(std::move(meta).value());
  }
  return out;
}

void FileTier::write_hits(const std::string& path, uint32_t hits) {
  int fd = io_->open(path, O_WRONLY, 0);
  if (fd < 0) return;
  uint8_t le[4] = {uint8_t(hits), uint8_t(hits >> 8), uint8_t(hits >> 16), uint8_t(hits >> 24)};
  io_->pwrite(fd, le, 4, kKvcHitCountOffset);
  // last_used_time (header offset 32): restores LRU order after a restart.
  uint64_t now = static_cast<uint64_t>(std::time(nullptr));
  uint8_t t[8];
  for (int i = 0; i < 8; ++i) t[i] = uint8_t(now >> (8 * i));
  io_->pwrite(fd, t, 8, 32);
  io_->close(fd);
}

}  // namespace hearth::cache
