// The file-system calls the file tiers make, behind an interface so tests can
// inject faults (ENOSPC, EIO, short writes, fsync failure). Every method returns
// the syscall's result, or -errno on failure, never throws; PosixIo is the real
// thing and the default.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hearth::cache {

class CacheIo {
 public:
  virtual ~CacheIo() = default;
  // Returns an fd or -errno.
  virtual int open(const std::string& path, int flags, mode_t mode) = 0;
  virtual int close(int fd) = 0;
  // Bytes written (may be short) or -errno.
  virtual ssize_t pwrite(int fd, const void* buf, size_t n, uint64_t off) = 0;
  // Bytes read (0 at EOF) or -errno.
  virtual ssize_t pread(int fd, void* buf, size_t n, uint64_t off) = 0;
  virtual int fdatasync(int fd) = 0;
  virtual int fsync(int fd) = 0;
  virtual int fstat_size(int fd, uint64_t* size) = 0;
  virtual int link(const std::string& from, const std::string& to) = 0;
  virtual int rename(const std::string& from, const std::string& to) = 0;
  virtual int unlink(const std::string& path) = 0;
  virtual int mkdir(const std::string& path, mode_t mode) = 0;
  // Names in a directory (no "." / ".."), or -errno.
  virtual int list_dir(const std::string& path, std::vector<std::string>* names) = 0;
  // Maps bytes [0, len) of fd read-only with their pages populated; *out = the address,
  // returns 0 or -errno. A large ram_file row (tmpfs) is copied out of such a mapping:
  // the kernel's copy out of tmpfs (pread) runs at about half of memcpy's speed. Also
  // Lease::view() of a file row.
  virtual int map_read(int fd, size_t len, const void** out) = 0;
  // Undoes map_read; 0 or -errno.
  virtual int unmap(const void* addr, size_t len) = 0;
};

// Direct system calls (EINTR retried).
std::shared_ptr<CacheIo> posix_io();

}  // namespace hearth::cache
