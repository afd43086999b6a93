#include "cache/direct_read.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cache/crc32c.h"

namespace hearth::cache {
namespace {

uint64_t round_down(uint64_t v) {
  return v & ~static_cast<uint64_t>(kDirectAlign - 1);
}
uint64_t round_up(uint64_t v) {
  return round_down(v + kDirectAlign - 1);
}

// The request buffers, kept per thread: a restore then takes no allocation and
// no page faults on them after the first.
uint8_t* request_buffers() {
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<uint8_t, Free> buffers(
      static_cast<uint8_t*>(std::aligned_alloc(kDirectAlign, kDirectSlots * kDirectRequest)));
  return buffers.get();
}

constexpr uint64_t kCopyPiece = 256u << 10;

// One request buffer's state, handed between the reader thread and the caller.
struct Slot {
  bool full = false;  // read, not yet consumed
  size_t got = 0;     // bytes read into it
  int err = 0;        // -errno of a failed read
};

}  // namespace

double cached_fraction(int fd, uint64_t file_size, uint64_t off, uint64_t len) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if (len == 0 || off + len > file_size) return 1;
  void* map = ::mmap(nullptr, file_size, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return 1;
  const uint64_t first = off / page, last = (off + len - 1) / page;
  std::vector<unsigned char> resident(last - first + 1);
  double fraction = 1;
  if (::mincore(static_cast<uint8_t*>(map) + first * page, (last - first + 1) * page,
                resident.data()) == 0) {
    size_t n = 0;
    for (unsigned char r : resident) n += r & 1;
    fraction = static_cast<double>(n) / static_cast<double>(resident.size());
  }
  ::munmap(map, file_size);
  return fraction;
}

Status direct_read(CacheIo& io, int fd, uint64_t off, std::span<const std::span<uint8_t>> dst,
                   uint32_t* crc) {
  uint64_t len = 0;
  for (const auto& d : dst) len += d.size();
  if (len == 0) return OkStatus();
  uint8_t* buffers = request_buffers();
  if (!buffers) return Unsupported("direct read: no aligned buffer");
  const int dfd = io.open("/proc/self/fd/" + std::to_string(fd), O_RDONLY | O_DIRECT, 0);
  if (dfd < 0) return Unsupported(std::string("direct read: open: ") + std::strerror(-dfd));

  const uint64_t start = round_down(off), end = round_up(off + len);
  const size_t n_req = static_cast<size_t>((end - start + kDirectRequest - 1) / kDirectRequest);
  std::mutex mu;
  std::condition_variable cv;
  Slot slots[kDirectSlots];
  bool stop = false;
  // The reader fills request k into buffer k % kDirectSlots once the caller has emptied it.
  std::thread reader([&] {
    for (size_t k = 0; k < n_req; ++k) {
      Slot& s = slots[k % kDirectSlots];
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return stop || !s.full; });
        if (stop) return;
      }
      const uint64_t at = start + k * kDirectRequest;
      const size_t want = static_cast<size_t>(std::min<uint64_t>(kDirectRequest, end - at));
      uint8_t* buf = buffers + (k % kDirectSlots) * kDirectRequest;
      size_t got = 0;
      int err = 0;
      while (got < want) {
        const ssize_t r = io.pread(dfd, buf + got, want - got, at + got);
        if (r < 0) err = static_cast<int>(-r);
        if (r <= 0) break;  // an error, or the end of the file (its last block is short)
        got += static_cast<size_t>(r);
      }
      std::lock_guard lock(mu);
      s = Slot{true, got, err};
      cv.notify_all();
      if (err) return;
    }
  });

  Status st = OkStatus();
  size_t di = 0, dpos = 0;  // destination span, offset in it
  for (size_t k = 0; k < n_req && st.ok(); ++k) {
    Slot& s = slots[k % kDirectSlots];
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return s.full; });
    }
    const uint64_t at = start + k * kDirectRequest;
    // The payload bytes this request carries: [lo, hi) of the buffer.
    const uint64_t lo = std::max(off, at) - at;
    const uint64_t hi = std::min(off + len, at + kDirectRequest) - at;
    if (s.err == EINVAL) {
      // The file system opened O_DIRECT but wants another alignment: not a device error.
      st = Unsupported("direct read: EINVAL (alignment)");
    } else if (s.err) {
      st = IoError(std::string("direct read: ") + std::strerror(s.err));
    } else if (s.got < hi) {
      st = DataLoss("direct read: unexpected end of file");
    } else {
      const uint8_t* src = buffers + (k % kDirectSlots) * kDirectRequest + lo;
      uint64_t left = hi - lo;
      while (left > 0) {
        const std::span<uint8_t>& d = dst[di];
        // Copy and CRC a piece at a time, so the CRC reads what the copy just wrote from cache.
        const size_t n =
            static_cast<size_t>(std::min<uint64_t>({left, d.size() - dpos, kCopyPiece}));
        std::memcpy(d.data() + dpos, src, n);
        if (crc) *crc = crc32c_extend(*crc, d.data() + dpos, n);
        src += n;
        left -= n;
        dpos += n;
        if (dpos == d.size()) {
          ++di;
          dpos = 0;
        }
      }
    }
    std::lock_guard lock(mu);
    s.full = false;
    if (!st.ok()) stop = true;
    cv.notify_all();
  }
  reader.join();
  io.close(dfd);
  return st;
}

}  // namespace hearth::cache
