#include "cache/slab_alloc.h"

#include <sys/mman.h>

#include <new>

namespace hearth::cache {
namespace {
constexpr size_t kHugeThreshold = 4u << 20;
constexpr size_t kHugePage = 2u << 20;
}  // namespace

Slab allocate_slab(size_t n) {
  Slab s;
  s.size = n;
  if (n < kHugeThreshold) {
    auto* p = new (std::nothrow) uint8_t[n == 0 ? 1 : n];
    if (p == nullptr) return {};
    s.owner = std::shared_ptr<void>(p, [](void* q) { delete[] static_cast<uint8_t*>(q); });
    s.data = p;
    return s;
  }
  size_t len = (n + kHugePage - 1) / kHugePage * kHugePage;
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return {};
  ::madvise(p, len, MADV_HUGEPAGE);  // advisory: fine if THP is off
  s.owner = std::shared_ptr<void>(p, [len](void* q) { ::munmap(q, len); });
  s.data = static_cast<uint8_t*>(p);
  return s;
}

}  // namespace hearth::cache
