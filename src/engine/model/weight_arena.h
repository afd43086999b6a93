// Where the weight matrices live while an engine runs.
//
// By default the matrices are copied out of the file mapping, once at load, into
// one anonymous region that asks the kernel for transparent huge pages
// (madvise(MADV_HUGEPAGE)); page-cache pages of a file are mapped 4 KiB at a time
// here. Decode streams every matrix once per token, so with 4 KiB pages it takes a
// TLB miss every 4 KiB and the hardware prefetchers stop at every page boundary;
// with 2 MiB pages neither happens (docs/engine.md: Q4_0 decode +7-20%, F16 ~4%).
// The copy costs one pass over the weights at load, and the mapping's pages of
// the copied tensors are released right after, so resident memory does not
// double. EngineOptions::weights_in_place keeps the matrices in the mapping
// (no copy; pages shared with every other process that maps the file, and no
// interleaved row groups, see copy_matrices_to_arena).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/huge_page_region.h"
#include "engine/model/weights.h"
#include "hearth/progress.h"
#include "hearth/status.h"

namespace hearth::engine {

// The weight matrices' region (a HugePageRegion): at least `bytes` bytes, rounded up
// to whole 2 MiB, 2 MiB aligned. Move-only.
class WeightArena {
 public:
  static Result<WeightArena> create(size_t bytes);

  uint8_t* data() const { return region_.data(); }
  size_t size() const { return region_.size(); }
  // How many matrices copy_matrices_to_arena stored as interleaved row groups.
  int interleaved_matrices() const { return interleaved_matrices_; }

 private:
  HugePageRegion region_;
  int interleaved_matrices_ = 0;

  friend Result<WeightArena> copy_matrices_to_arena(ModelWeights& w, kb::ThreadPool& pool,
                                                    const kb::KernelSet& kernels,
                                                    const ProgressFn& progress);
};

// Copies every weight matrix that matmul reads (the layers' projections and the
// output head, not token_embd unless it is the tied output) into one new arena,
// 64-byte aligned each, points `w`'s views at the copies and releases the file
// mapping's pages of the copied tensors. The copy runs on `pool`.
//
// A matrix whose type `kernels` has an interleaved row-group kernel for is stored
// interleaved (engine/row_group_layout.h; the view's `interleaved` is set): decode
// then reads it with plain loads instead of regrouping 8 rows in registers. The
// tied output stays plain: its rows are also the token embeddings.
// `progress` (may be empty) is called on the calling thread with the bytes copied so
// far and the total, a few dozen times.
Result<WeightArena> copy_matrices_to_arena(ModelWeights& w, kb::ThreadPool& pool,
                                           const kb::KernelSet& kernels,
                                           const ProgressFn& progress);

}  // namespace hearth::engine
