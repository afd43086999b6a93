#include "cache/slab_alloc.h"

#include <new>

#include "common/huge_page_region.h"

namespace hearth::cache {
namespace {
constexpr size_t kHugeThreshold = 4u << 20;
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
  auto region = HugePageRegion::create(n, "a ram-tier slab");
  if (!region.ok()) return {};
  auto owned = std::make_shared<HugePageRegion>(std::move(region).value());
  s.data = owned->data();
  s.owner = std::move(owned);
  return s;
}

}  // namespace hearth::cache
