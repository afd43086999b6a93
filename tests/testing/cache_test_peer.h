// White-box access to a Cache's internal state (src/cache/cache_impl.h) for the cache
// tests. Cache names this peer a friend; only test code defines it, so the public API
// carries no test hook and production code cannot reach the internals.
#pragma once

#include "cache/cache_impl.h"
#include "hearth/cache/cache.h"

namespace hearth::cache {

struct CacheTestPeer {
  static Cache::Impl& impl(Cache& cache) { return *cache.impl_; }
};

}  // namespace hearth::cache
