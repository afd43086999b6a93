// A CacheIo that passes every call to the real system calls: test doubles derive from
// it and override only the calls they hook or fail.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hearth/cache/io.h"

namespace hearth::cache::testing {

class ForwardingIo : public CacheIo {
 public:
  std::shared_ptr<CacheIo> real = posix_io();

  int open(const std::string& p, int f, mode_t m) override { return real->open(p, f, m); }
  int close(int fd) override { return real->close(fd); }
  ssize_t pwrite(int fd, const void* b, size_t n, uint64_t off) override {
    return real->pwrite(fd, b, n, off);
  }
  ssize_t pread(int fd, void* b, size_t n, uint64_t off) override {
    return real->pread(fd, b, n, off);
  }
  int fdatasync(int fd) override { return real->fdatasync(fd); }
  int fsync(int fd) override { return real->fsync(fd); }
  int fstat_size(int fd, uint64_t* s) override { return real->fstat_size(fd, s); }
  int link(const std::string& a, const std::string& b) override { return real->link(a, b); }
  int rename(const std::string& a, const std::string& b) override { return real->rename(a, b); }
  int unlink(const std::string& p) override { return real->unlink(p); }
  int mkdir(const std::string& p, mode_t m) override { return real->mkdir(p, m); }
  int list_dir(const std::string& p, std::vector<std::string>* n) override {
    return real->list_dir(p, n);
  }
  int map_read(int fd, size_t len, const void** out) override {
    return real->map_read(fd, len, out);
  }
  int unmap(const void* a, size_t len) override { return real->unmap(a, len); }
};

}  // namespace hearth::cache::testing
