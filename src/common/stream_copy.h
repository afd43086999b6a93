// Copies that store past the caches.
//
// Restoring a KV row copies tens to hundreds of megabytes that the next forward pass
// reads from memory anyway. An ordinary store first reads the destination line into the
// cache (a third more memory traffic) and evicts lines the copy will never touch again;
// a non-temporal store writes whole lines straight to memory. glibc's memcpy switches
// to such stores only above a size it derives from the cache (tens of megabytes on a
// large L3), so the ~1 MiB runs a restore is made of were copied the slow way.
#pragma once

#include <cstddef>

namespace hearth {

// Copies n bytes from src to dst (no overlap). The destination's whole 64-byte lines
// are written with non-temporal stores (the few bytes before the first and after the
// last are ordinary stores), then a store fence orders them before the call returns,
// so another thread may read dst once it learns the copy is done.
void stream_copy(void* dst, const void* src, size_t n);

// The same without the fence: for a caller that copies many pieces, then calls
// stream_fence() once before anyone reads them.
void stream_copy_unfenced(void* dst, const void* src, size_t n);
void stream_fence();

}  // namespace hearth
