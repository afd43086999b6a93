#include "engine/model/weight_arena.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "engine/row_group_layout.h"

namespace hearth::engine {
namespace {

constexpr size_t kTensorAlign = 64;
// Copy granule handed to the pool: large enough to stream, small enough to share.
constexpr size_t kCopyChunk = size_t{1} << 20;

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

// The matrices matmul reads, each once (the tied output is token_embd itself).
std::vector<kb::WeightView*> matrices_of(ModelWeights& w) {
  std::vector<kb::WeightView*> out;
  for (LayerWeights& l : w.layers) {
    for (kb::WeightView* v :
         {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.gate_inp}) {
      if (v->data != nullptr) out.push_back(v);  // dense and MoE layers have different ones
    }
    for (auto* experts : {&l.gate_exps, &l.up_exps, &l.down_exps})
      for (kb::WeightView& v : *experts) out.push_back(&v);
  }
  out.push_back(w.tied ? &w.token_embd : &w.output);
  return out;
}

// Drops this process's mapping of the whole pages inside [p, p + n) (a private,
// read-only file mapping: they come back from the page cache if touched again).
void release_mapped_pages(const uint8_t* p, size_t n) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end > begin) {
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // advisory
  }
}

}  // namespace

Result<WeightArena> WeightArena::create(size_t bytes) {
  WeightArena a;
  HEARTH_ASSIGN_OR_RETURN(a.region_, HugePageRegion::create(bytes, "the weight matrices"));
  return a;
}

Result<WeightArena> copy_matrices_to_arena(ModelWeights& w, kb::ThreadPool& pool,
                                           const kb::KernelSet& kernels,
                                           const ProgressFn& progress) {
  const std::vector<kb::WeightView*> views = matrices_of(w);
  // Each matrix's place in the arena, its size and whether it is interleaved.
  std::vector<size_t> offsets, sizes;
  std::vector<bool> interleave;
  size_t total = 0;
  for (const kb::WeightView* v : views) {
    offsets.push_back(round_up(total, kTensorAlign));
    sizes.push_back(v->row_bytes() * static_cast<size_t>(v->rows));
    total = offsets.back() + sizes.back();
    const int type_id = static_cast<int>(v->type);
    interleave.push_back(!(w.tied && v == &w.token_embd) && has_interleaved_layout(v->type) &&
                         kernels.group_dot_interleaved[type_id] != nullptr);
  }
  HEARTH_ASSIGN_OR_RETURN(WeightArena arena, WeightArena::create(total));

  // A chunk is a byte range copied as it is, or whole row groups interleaved.
  struct Copy {
    const kb::WeightView* view;
    const uint8_t* from;
    uint8_t* to;
    size_t bytes;
    bool interleave;
  };
  std::vector<Copy> chunks;
  for (size_t i = 0; i < views.size(); ++i) {
    const kb::WeightView& v = *views[i];
    const size_t row_bytes = v.row_bytes();
    size_t c = 0;
    if (interleave[i]) {
      const size_t group_bytes = row_bytes * kb::kInterleavedRows;
      const size_t grouped = static_cast<size_t>(v.rows / kb::kInterleavedRows) * group_bytes;
      const size_t step = std::max<size_t>(1, kCopyChunk / group_bytes) * group_bytes;
      for (; c < grouped; c += step) {
        chunks.push_back(
            {&v, v.data + c, arena.data() + offsets[i] + c, std::min(step, grouped - c), true});
      }
    }
    for (; c < sizes[i]; c += kCopyChunk) {
      chunks.push_back({&v, v.data + c, arena.data() + offsets[i] + c,
                        std::min(kCopyChunk, sizes[i] - c), false});
    }
  }
  // The chunks go in a few dozen rounds, so progress is reported from this thread.
  const size_t n_chunks = chunks.size();
  const size_t per_round =
      progress ? std::max<size_t>(1, n_chunks / 40) : std::max<size_t>(1, n_chunks);
  uint64_t copied = 0;
  if (progress) progress(0, total);
  for (size_t first = 0; first < n_chunks; first += per_round) {
    const size_t last = std::min(n_chunks, first + per_round);
    pool.parallel_for_dynamic(static_cast<int64_t>(last - first), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b + static_cast<int64_t>(first); i < e + static_cast<int64_t>(first); ++i) {
        const Copy& c = chunks[static_cast<size_t>(i)];
        if (!c.interleave) {
          std::memcpy(c.to, c.from, c.bytes);
          continue;
        }
        const size_t row_bytes = c.view->row_bytes();
        const size_t group_bytes = row_bytes * kb::kInterleavedRows;
        for (size_t g = 0; g < c.bytes; g += group_bytes) {
          interleave_row_group(c.view->type, c.from + g, row_bytes, c.view->cols, c.to + g);
        }
      }
    });
    for (size_t i = first; i < last; ++i) copied += chunks[i].bytes;
    if (progress) progress(std::min<uint64_t>(copied, total), total);
  }
  if (progress) progress(total, total);

  for (size_t i = 0; i < views.size(); ++i) {
    release_mapped_pages(views[i]->data, sizes[i]);
    views[i]->data = arena.data() + offsets[i];
    views[i]->interleaved = interleave[i];
    arena.interleaved_matrices_ += interleave[i] ? 1 : 0;
  }
  if (w.tied) w.output = w.token_embd;
  return arena;
}

}  // namespace hearth::engine
