#include "common/huge_page_region.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace hearth {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

}  // namespace

HugePageRegion::~HugePageRegion() {
  reset();
}

HugePageRegion::HugePageRegion(HugePageRegion&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

HugePageRegion& HugePageRegion::operator=(HugePageRegion&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void HugePageRegion::reset() {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

Result<HugePageRegion> HugePageRegion::create(size_t bytes, const char* what) {
  if (bytes == 0) return InvalidArgument(std::string(what) + ": size must be positive");
  if (bytes > SIZE_MAX - 2 * kHugePage) {
    return ResourceExhausted(std::string(what) + ": " + std::to_string(bytes) +
                             " bytes is more than the address space");
  }
  const size_t size = round_up(bytes, kHugePage);
  // One extra huge page so the start can be aligned to 2 MiB (mmap only promises
  // the base page size); the slack before and after is unmapped again.
  const size_t map_size = size + kHugePage;
  void* m = ::mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    return ResourceExhausted("cannot map " + std::to_string(size) + " bytes for " + what + ": " +
                             std::strerror(errno));
  }
  const auto base = reinterpret_cast<uintptr_t>(m);
  const uintptr_t aligned = round_up(base, kHugePage);
  if (aligned > base) ::munmap(m, aligned - base);
  const uintptr_t tail = aligned + size;
  if (base + map_size > tail) ::munmap(reinterpret_cast<void*>(tail), base + map_size - tail);
  HugePageRegion r;
  r.data_ = reinterpret_cast<uint8_t*>(aligned);
  r.size_ = size;
  ::madvise(r.data_, size, MADV_HUGEPAGE);  // advisory: 4 KiB pages if THP is off
  return r;
}

}  // namespace hearth
