// The dot-product kernels behind matmul, one table per instruction set.
//
// Every kernel computes each output with one fixed sequence of float operations
// (the "canonical order", docs/engine-kernels.md): integer block sums are exact,
// and the float part (scale products, FMAs into per-phase accumulators, the final
// reduction tree) is the same in the scalar reference and in every SIMD kernel.
// So all tables give bit-identical results; tests check it on random data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hearth/engine/kv_type.h"
#include "hearth/gguf/gguf.h"

namespace hearth::engine {

// Which quantized form an activation row takes before a dot with a weight row of
// type `weight` (llama.cpp's pairing): Q4_0/Q5_0/Q8_0 -> Q8_0, Q4_1/Q5_1 -> Q8_1,
// Q2_K..Q6_K -> Q8_K, F16 -> F16, BF16 -> BF16, F32 -> F32.
gguf::TensorType activation_type(gguf::TensorType weight);

// Working format of a Q8_0-partner activation row (what the kernels receive):
// the nb = n/32 Q8_0 blocks, then at q8_0_side_offset(nb) nb floats (exactly
// fp16_to_fp32 of each block's d) and nb int32 (each block's sum of quants).
// The side arrays let SIMD kernels load 4 scales / sums at once; the scalar
// reference reads only the blocks. Other partner formats are the plain GGUF rows.
inline constexpr size_t q8_0_side_offset(int64_t nb) {
  return static_cast<size_t>(nb * 34 + 31) / 32 * 32;
}
// Where the nb int32 block sums start (after the nb float scales).
inline constexpr size_t q8_0_sums_offset(int64_t nb) {
  return q8_0_side_offset(nb) + static_cast<size_t>(nb) * 4;
}
inline constexpr size_t q8_0_working_row_bytes(int64_t nb) {
  return (q8_0_sums_offset(nb) + static_cast<size_t>(nb) * 4 + 31) / 32 * 32;
}

// How far ahead of an F16 weight row's reads its decode dot prefetches: one 2048-wide
// row (4 KiB). Past a 4 KiB page the hardware prefetcher starts over; without this the
// 32000x2048 mat-vec from memory streamed 33 GB/s on one thread and 44-47 on two, with
// it 37-39 and 49-52 (hearth_microbench, AVX2 table). Prefetches never fault, so reading
// ahead past a range's end only costs a few lines.
inline constexpr size_t kF16PrefetchBytes = 4096;

// Working format of an F16-partner activation row: the n F16 values, then at
// f16_side_offset(n) (64-byte aligned) the same n values widened to float (exact).
// SIMD kernels with a prefill tile read the floats, so a token costs one FMA per
// element instead of a conversion and an FMA; the scalar reference reads the F16s.
inline constexpr size_t f16_side_offset(int64_t n) {
  return static_cast<size_t>(n * 2 + 63) / 64 * 64;
}
inline constexpr size_t f16_working_row_bytes(int64_t n) {
  return f16_side_offset(n) + static_cast<size_t>(n * 4 + 63) / 64 * 64;
}

// Zero the padding bytes of a working row (after the blocks / halves and after the
// side arrays) so rows are fully defined: hashable, comparable byte for byte.
inline void clear_q8_0_working_padding(uint8_t* out, int64_t nb) {
  const size_t blocks = static_cast<size_t>(nb) * 34;
  const size_t used = q8_0_sums_offset(nb) + static_cast<size_t>(nb) * 4;
  std::memset(out + blocks, 0, q8_0_side_offset(nb) - blocks);
  std::memset(out + used, 0, q8_0_working_row_bytes(nb) - used);
}
inline void clear_f16_working_padding(uint8_t* out, int64_t n) {
  const size_t halves = static_cast<size_t>(n) * 2;
  const size_t used = f16_side_offset(n) + static_cast<size_t>(n) * 4;
  std::memset(out + halves, 0, f16_side_offset(n) - halves);
  std::memset(out + used, 0, f16_working_row_bytes(n) - used);
}

// One weight row (n elements of the weight type) . one activation row (n
// elements of activation_type(), in the working format above).
using VecDotFn = float (*)(const void* w, const void* x, int64_t n);

// One weight row against nt <= kMaxTileTokens activation rows (row t at
// x + t * x_stride bytes): out[t] = vec_dot(w, x_t, n), bit for bit; the weight
// row is decoded once per block and shared.
inline constexpr int kMaxTileTokens = 4;
using MultiDotFn = void (*)(const void* w, const uint8_t* x, size_t x_stride, int nt, int64_t n,
                            float* out);
// Two weight rows (w0, w1) against the same nt activation rows: out0[t] / out1[t]
// are bit for bit what MultiDotFn gives for each row. Each activation load then
// feeds two rows, which the float formats need to stay off the L1 load limit.
using MultiDot2Fn = void (*)(const void* w0, const void* w1, const uint8_t* x, size_t x_stride,
                             int nt, int64_t n, float* out0, float* out1);

inline constexpr int kTypeSlots = 40;  // indexed by the raw gguf type id

// Attention over one KV head's rows, F16 or Q8_0 / Q4_0 blocks (engine/model/
// attention.h has the definitions and the canonical orders every implementation keeps).
//
// One token's queries on one KV head: the `group` query heads that share it (GQA).
struct TokenQueries {
  int32_t pos;     // attends to positions 0..pos
  const float* q;  // group * head_dim values, already rounded to F16, head after head
  float* out;      // group * head_dim outputs, same layout
};
// Widest position tile of any table and the largest head_dim a tiled kernel takes:
// they size the scratch (attend_tokens_scratch_floats) that AttendTask::scratch holds.
inline constexpr int32_t kAttendMaxLanes = 16;
inline constexpr int32_t kAttendMaxHeadDim = 256;
// Floats of the K tile at the start of AttendTask::scratch (and of a split scratch).
inline constexpr size_t kAttendTileFloats = size_t{kAttendMaxHeadDim} * kAttendMaxLanes;
// Floats of AttendTask::scratch holding n_tokens x group queries of head_dim transposed
// (rounded up to a whole tile, so that the scores after them start aligned).
inline constexpr size_t attend_queries_floats(int32_t n_tokens, int32_t group, int32_t head_dim) {
  const size_t n =
      static_cast<size_t>(n_tokens) * static_cast<size_t>(group) * static_cast<size_t>(head_dim);
  return (n + kAttendMaxLanes - 1) / kAttendMaxLanes * kAttendMaxLanes;
}
struct AttendTask {
  // F16 K in the store's tiles (engine/kernels/kv_blocks.h): tile 0 at this KV head's
  // first element, so element d of slot s is at
  // k0[(s / kKTile) * kKTile * stride + d * kKTile + s % kKTile].
  const uint16_t* k0;
  const uint16_t* v0;  // F16 V of slot 0 at this KV head's first element
  size_t stride;       // halves of one slot's K: kv_dim
  int32_t group;
  const TokenQueries* tokens;  // in increasing pos order
  int32_t n_tokens;            // > 0
  int32_t head_dim;
  float scale;
  // kAttendTileFloats floats of K tile, then (F16 rows) the block's
  // queries transposed (attend_queries_floats), then the scores.
  float* scratch;
  // Gemma: scores soft-capped (canon::softcap) before the softmax when > 0, and each
  // query sees only positions canon::window_start(pos, window) .. pos.
  float softcap = 0.0f;
  int32_t window = 0;
  // Quantized KV (kv_type != kF16): k0 and v0 are unused; kq0 and vq0 point at this KV
  // head's first block of position 0, q_stride bytes from one position to the next.
  KvType kv_type = KvType::kF16;
  const uint8_t* kq0 = nullptr;
  const uint8_t* vq0 = nullptr;
  size_t q_stride = 0;
  // A sliding-window layer's ring (KvStore): position p lies in slot p % ring, k0 (kq0)
  // being slot 0; 0: position p in slot p. A multiple of 16, or more than any pos.
  int32_t ring = 0;
  // Halves from one slot's F16 V to the next (v0's): the store's head runs keep a KV
  // head's V rows head_dim apart (KvStore::v_head_dim), rows kv_dim apart.
  size_t v_stride = 0;
};
// Every query head of the task, positions tiled `lanes` at a time (0: the widest
// this table has for head_dim). False, with nothing written, when the table has no
// such tiling or head_dim does not fit it.
using AttendFn = bool (*)(int32_t lanes, const AttendTask& task);
// One decode token on n KV heads, split by positions (optional; nullptr: attend per
// head). tasks[h]: the token's queries on KV head first + h, the heads side by side
// (in each K tile and each V row), each task's scratch its own (attend's layout, where
// the score rows are kept). attend_scores: the scores at positions [p0, p1) (p0 a multiple of
// kAttendMaxLanes) of every task; scratch: attend_split_scratch_floats(n, group,
// head_dim) floats of the caller's; the range may be empty (then it only answers).
// False (nothing done) when this table does not split such tasks (quantized or
// windowed rows, a ring, several tokens, or a head_dim it does not tile).
// attend_finish: the rest (soft-cap, softmax, P.V) once a task's every score is in.
// Outputs: attend's bits.
using AttendScoresFn = bool (*)(const AttendTask* tasks, int32_t n, int32_t p0, int32_t p1,
                                float* scratch);
using AttendFinishFn = void (*)(const AttendTask& task);
inline constexpr size_t attend_split_scratch_floats(int32_t n, int32_t group, int32_t head_dim) {
  return kAttendTileFloats +
         static_cast<size_t>(n) * static_cast<size_t>(group) * static_cast<size_t>(head_dim);
}

// Prefill panels (optional, per weight type). A panel is kPanelRows consecutive
// weight rows repacked so that one SIMD register holds the same 4-element group of
// every row: the GEMM broadcasts 4 activation bytes per step and each row's exact
// block sum builds up in its own lane, with no horizontal reduction. Packing is
// done per matmul call into a small per-thread buffer (the weights stay as they
// lie in the mapping) and amortized over all the tokens of the call.
//   bytes(n): size of a panel of rows with n elements.
//   pack: rows [0, n_rows) (n_rows <= kPanelRows) of n elements, row i at
//     w + i * row_stride, into `panel`; missing rows are packed as zeros.
//   gemm: y[t * y_stride + i] = dot(row i, activation row t) for t < nt and
//     i < n_rows, bit for bit what `dot` returns (same canonical order).
// A format whose GEMM takes the weight rows in place sets bytes and pack to
// nullptr; its gemm then takes the rows themselves as `panel`, any n_rows, and the
// caller hands it cache-sized blocks of rows instead of panels. (F16: the AVX-512
// GEMM reads the rows as they lie; the AVX2 one regroups each block once into its
// own per-thread buffer, amortized over all the tokens, as a packing format would
// per panel.)
inline constexpr int kPanelRows = 16;
struct PanelKernels {
  size_t (*bytes)(int64_t n);
  void (*pack)(const void* w, size_t row_stride, int n_rows, int64_t n, uint8_t* panel);
  void (*gemm)(const uint8_t* panel, int n_rows, int64_t n, const uint8_t* x, size_t x_stride,
               int nt, float* y, size_t y_stride);
  // Fewest tokens for which this format's panels beat the tile path; 0: matmul's
  // default (8: the pack touches every weight once, like one token's dot products).
  int min_tokens = 0;
};

// Decode over row groups (optional, per weight type): kRowGroup consecutive weight
// rows (row i at w + i * row_stride) against one activation row of n elements:
// out[i] = dot(row i, x), bit for bit. The kernel regroups the rows' blocks in
// registers (as a panel does, but nothing is stored), so each row's block sums
// build up in its own lane and the per-block horizontal reductions of the one-row
// dot go away.
inline constexpr int kRowGroup = 8;
using GroupDotFn = void (*)(const void* w, size_t row_stride, const uint8_t* x, int64_t n,
                            float* out);
// The same over one group of kInterleavedRows rows stored interleaved
// (engine/row_group_layout.h): w is the group, row_stride the plain row's bytes;
// out[i] = dot(plain row i, x) for i < kInterleavedRows, bit for bit.
inline constexpr int kInterleavedRows = 16;
// Prefill over a run of n_groups interleaved groups (optional, per weight type), group
// g at groups + g * group_bytes: its kInterleavedRows rows against nt activation rows
// (row t at x + t * x_stride), each weight block loaded and decoded once for a tile of
// tokens: y[t * y_stride + g * kInterleavedRows + i] = dot(plain row i of group g, x row
// t), bit for bit. Reads the arena's layout as it lies (no regrouping, no panel
// packing); a run lets a kernel share each activation load between two groups.
using GroupGemmFn = void (*)(const void* groups, size_t group_bytes, int n_groups, int64_t n,
                             const uint8_t* x, size_t x_stride, int nt, float* y, size_t y_stride);

struct KernelSet {
  const char* isa;                   // "scalar", "avx2", "avx2-vnni", "avx512-vnni", "neon"
  VecDotFn dot[kTypeSlots];          // by weight type; nullptr = unsupported
  MultiDotFn multi[kTypeSlots];      // by weight type; nullptr = loop over dot
  MultiDot2Fn multi2[kTypeSlots];    // by weight type; nullptr = multi row by row
  PanelKernels panel[kTypeSlots];    // by weight type; gemm == nullptr = no panel path
  GroupDotFn group_dot[kTypeSlots];  // by weight type; nullptr = dot row by row
  // By weight type, for interleaved groups; nullptr = regroup into plain rows first.
  GroupDotFn group_dot_interleaved[kTypeSlots];
  // By weight type, for interleaved groups and several tokens; nullptr = none.
  GroupGemmFn group_gemm_interleaved[kTypeSlots];
  // Optional: the Q8_0-partner activation row in the working format, byte for byte
  // what quantize_activation_row() writes (nullptr = use that reference).
  void (*quantize_q8_0)(const float* x, int64_t n, uint8_t* out);
  // Optional: the F16-partner activation row in its working format, likewise.
  void (*quantize_f16)(const float* x, int64_t n, uint8_t* out);
  // Optional: the Q8_K-partner activation row (plain Q8_K blocks), likewise.
  void (*quantize_q8_k)(const float* x, int64_t n, uint8_t* out);

  // Optional model-side kernels, each giving exactly the bits of the portable code in
  // engine/model (nullptr = that code). Here rather than compiled for the build's
  // -march so that a portable binary still gets them, chosen at run time.
  // y[i] = canon::exp_f32(x[i]).
  void (*exp_f32)(const float* x, float* y, int64_t n);
  // engine/model/activation.h's silu_mul.
  void (*silu_mul)(float* gate, const float* up, int64_t n);
  // engine/model/attention.h's softmax_f16.
  void (*softmax_f16)(float* scores, int32_t n, float scale);
  // engine/model/half_rows.h's to_f16: y[i] = fp32_to_fp16(x[i]).
  void (*to_f16)(const float* x, uint16_t* y, int64_t n);
  // engine/model/half_rows.h's round_to_f16: y[i] = fp16_to_fp32(fp32_to_fp16(x[i] * scale)).
  void (*round_to_f16)(const float* x, float scale, float* y, int64_t n);
  AttendFn attend;
  AttendScoresFn attend_scores;  // nullptr: no split decode
  AttendFinishFn attend_finish;
};

// The portable reference (always available).
const KernelSet& scalar_kernels();
// The AVX2+FMA+F16C table, or nullptr when not compiled in (non-x86 builds).
// Calling into it on a CPU without those features is undefined: use
// active_kernels() unless you checked cpu_features() yourself.
const KernelSet* avx2_kernels();
// The AVX2 table with AVX-VNNI 32-block kernels (x86 builds), else nullptr.
// Same rule: only call into it when cpu_features() reports avxvnni too.
const KernelSet* avxvnni_kernels();
// The AVX-VNNI/AVX2 table with AVX-512 VNNI kernels for Q4_0, Q5_0 and Q8_0
// (x86-64 builds), else nullptr. Only call into it when cpu_features() reports
// AVX2, FMA, F16C and AVX-512 F/BW/VL/VNNI.
const KernelSet* avx512_kernels();
// The NEON table on AArch64 builds, else nullptr.
const KernelSet* neon_kernels();

// The best table this CPU can run (chosen once, at first use).
const KernelSet& active_kernels();

}  // namespace hearth::engine
