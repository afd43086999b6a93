#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hearth/cache/io.h"

namespace hearth::cache {
namespace {

template <typename F>
auto retry_eintr(F f) {
  decltype(f()) r;
  do {
    r = f();
  } while (r < 0 && errno == EINTR);
  return r < 0 ? static_cast<decltype(r)>(-errno) : r;
}

class PosixIo final : public CacheIo {
 public:
  int open(const std::string& path, int flags, mode_t mode) override {
    return retry_eintr([&] { return ::open(path.c_str(), flags | O_CLOEXEC, mode); });
  }
  int close(int fd) override { return ::close(fd) < 0 ? -errno : 0; }
  ssize_t pwrite(int fd, const void* buf, size_t n, uint64_t off) override {
    return retry_eintr([&] { return ::pwrite(fd, buf, n, static_cast<off_t>(off)); });
  }
  ssize_t pread(int fd, void* buf, size_t n, uint64_t off) override {
    return retry_eintr([&] { return ::pread(fd, buf, n, static_cast<off_t>(off)); });
  }
  int fdatasync(int fd) override {
    return retry_eintr([&] { return ::fdatasync(fd); });
  }
  int fsync(int fd) override {
    return retry_eintr([&] { return ::fsync(fd); });
  }
  int fstat_size(int fd, uint64_t* size) override {
    struct stat st;
    if (::fstat(fd, &st) < 0) return -errno;
    *size = static_cast<uint64_t>(st.st_size);
    return 0;
  }
  int link(const std::string& from, const std::string& to) override {
    return ::link(from.c_str(), to.c_str()) < 0 ? -errno : 0;
  }
  int rename(const std::string& from, const std::string& to) override {
    return ::rename(from.c_str(), to.c_str()) < 0 ? -errno : 0;
  }
  int unlink(const std::string& path) override { return ::unlink(path.c_str()) < 0 ? -errno : 0; }
  int mkdir(const std::string& path, mode_t mode) override {
    return ::mkdir(path.c_str(), mode) < 0 ? -errno : 0;
  }
  int list_dir(const std::string& path, std::vector<std::string>* names) override {
    DIR* d = ::opendir(path.c_str());
    if (d == nullptr) return -errno;
    names->clear();
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      names->emplace_back(e->d_name);
    }
    int err = errno;
    ::closedir(d);
    return err != 0 ? -err : 0;
  }
  int map_read(int fd, size_t len, const void** out) override {
    void* m = ::mmap(nullptr, len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (m == MAP_FAILED) return -errno;
    *out = m;
    return 0;
  }
  int unmap(const void* addr, size_t len) override {
    return ::munmap(const_cast<void*>(addr), len) < 0 ? -errno : 0;
  }
};

}  // namespace

std::shared_ptr<CacheIo> posix_io() {
  static std::shared_ptr<CacheIo> io = std::make_shared<PosixIo>();
  return io;
}

}  // namespace hearth::cache
