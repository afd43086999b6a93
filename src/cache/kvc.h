// KVC file format (versions 1 and 2), little-endian throughout:
//
//   [0..47]   header, 48 bytes:
//               u8[3] "KVC", u8 version (1: full row, 2: delta row), u8 quant_bits, u8 save_reason
//               (0..5), u8 flags (bit 0: meta_crc32c present; required), u8 reserved, u32
//               cached_token_count, u32 hit_count, u32 context_size, u8[4] reserved, u64
//               creation_time (unix s), u64 last_used_time (unix s), u64 payload_byte_count
//   [48..71]  trailer, 24 bytes: u64 payload_offset, u64 payload_length,
//               u32 payload_crc32c, u32 meta_crc32c
//   [72..]    prompt section: u32 length + UTF-8 bytes (observability only)
//   [..]      TLV section: u32 length + records (u8 tag, u32 length, value)
//   [..end]   payload: opaque bytes (the runtime's packed KV state)
//
// meta_crc32c covers every byte before the payload (header, trailer, prompt, TLVs:
// tokens, namespace, the stored logits) except the three fields that change in place
// (hit_count, last_used_time, meta_crc32c itself, each counted as zeros). A restore
// trusts nothing a checksum does not cover: a row whose flags lack bit 0 is refused.
//
// TLV tags 0x01..0x09 are those of the reference design; 0x0A carries the
// last-position logits the runtime needs to resume sampling without a forward
// pass. Readers skip tags they do not know, and keep them in KvcInfo::extra_tlvs.
//
// Delta rows (version 2). A version-2 row is a continuation of a parent row: its
// payload holds only the positions after the parent's, and the required TLV 0x0B
// names the parent (see KvcDelta). A version-1 row never carries 0x0B; a version-2
// row always does. A reader that knows version 1 only refuses a delta row at the
// version byte instead of mistaking its short payload for a whole row. The payload
// layout a delta needs is "groups" equal, position-major runs (the runtime's packed
// KV: one run per layer and K/V), each `bytes_per_position` wide per position; a
// delta's payload is, for each group in order, the group's positions
// [parent_tokens, tokens). Its tokens TLV still lists every token of the row (the
// key replays over all of them); its payload CRC covers its own (delta) bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hearth/cache/key.h"
#include "hearth/cache/types.h"
#include "hearth/status.h"

namespace hearth::cache {

inline constexpr size_t kKvcHeaderSize = 48;
inline constexpr size_t kKvcTrailerSize = 24;
inline constexpr uint8_t kKvcVersion = 1;         // a full row
inline constexpr uint8_t kKvcDeltaVersion = 2;    // a delta row (TLV 0x0B required)
inline constexpr size_t kKvcHitCountOffset = 12;  // u32 hit_count inside the header
inline constexpr size_t kKvcLastUsedOffset = 32;  // u64 last_used_time inside the header
inline constexpr size_t kKvcMetaCrcOffset = 68;   // u32 meta_crc32c inside the trailer
inline constexpr uint8_t kKvcFlagMetaCrc = 0x01;  // header byte 6

enum KvcTag : uint8_t {
  kTagFingerprint = 0x01,       // 32 bytes
  kTagFingerprintMode = 0x02,   // 1 byte
  kTagQuantType = 0x03,         // 1 byte (QuantType)
  kTagCtxParamsHash = 0x04,     // 32 bytes
  kTagHostname = 0x05,          // variable
  kTagVersion = 0x06,           // variable (producer version string)
  kTagSaveReasonDetail = 0x07,  // variable
  kTagTokenIdCount = 0x08,      // u32
  kTagTokenIds = 0x09,          // u32 * count
  kTagLogits = 0x0A,            // runtime: last-position logits, f32 LE * n_vocab
  kTagDelta = 0x0B,             // delta rows only: KvcDelta, 64 bytes
};

// TLV 0x0B of a delta row: u8[32] parent_key, u32 parent_tokens, u32 groups,
// u32 depth, u32 reserved (0), u64 full_payload_bytes (the whole chain's payload,
// what a restore yields), u64 bytes_per_position (per group).
struct KvcDelta {
  CacheKey parent_key{};
  uint32_t parent_tokens = 0;  // the parent's token count (its tokens prefix this row's)
  uint32_t groups = 0;         // position-major runs in the payload (> 0)
  uint32_t depth = 1;          // links below this row down to a full row (>= 1)
  uint64_t full_payload_bytes = 0;
  uint64_t bytes_per_position = 0;
};
inline constexpr size_t kKvcDeltaTlvSize = 64;

struct KvcTlv {
  uint8_t tag = 0;
  std::vector<uint8_t> value;
};

// What a writer supplies besides the payload.
struct KvcBuildMeta {
  SaveReason save_reason = SaveReason::kUnknown;
  uint8_t quant_bits = 16;
  KeyNamespace ns;
  FingerprintMode fingerprint_mode = FingerprintMode::kSafe;
  std::vector<Token> tokens;
  uint32_t context_size = 0;
  uint64_t creation_time = 0;   // 0 = now
  uint64_t last_used_time = 0;  // 0 = now
  uint32_t hit_count = 0;
  std::string prompt_text;
  std::string hostname;  // empty = gethostname()
  std::string version = "hearth 0.1.0";
  std::string save_reason_detail;
  std::vector<KvcTlv> extra_tlvs;  // e.g. kTagLogits; tags 0x01-0x09 and 0x0B are refused
  // The payload's layout, when it has one a delta row can be cut from: `kv_groups`
  // equal position-major runs (the runtime's packed KV: 2 * n_layer). 0 = opaque
  // bytes, always saved whole. The cache decides whether to save a delta.
  uint32_t kv_groups = 0;
  // Set by the cache only (Cache::save refuses a caller's): this row is a delta.
  std::optional<KvcDelta> delta;
};

// Parsed header + trailer + prompt + TLVs.
struct KvcInfo {
  uint8_t version = 0;
  uint8_t quant_bits = 0;
  SaveReason save_reason = SaveReason::kUnknown;
  uint32_t cached_token_count = 0;
  uint32_t hit_count = 0;
  uint32_t context_size = 0;
  uint64_t creation_time = 0;
  uint64_t last_used_time = 0;
  uint64_t payload_byte_count = 0;
  uint64_t payload_offset = 0;
  uint64_t payload_length = 0;
  uint32_t payload_crc32c = 0;
  std::string prompt_text;
  KeyNamespace ns;
  FingerprintMode fingerprint_mode = FingerprintMode::kSafe;
  std::vector<Token> tokens;
  std::string hostname;
  std::string version_string;
  std::string save_reason_detail;
  std::vector<KvcTlv> extra_tlvs;  // unknown tags, kept in file order
  std::optional<KvcDelta> delta;   // version 2 only

  CacheKey key() const { return make_key(ns, tokens); }
  uint64_t file_size() const { return payload_offset + payload_length; }
  const KvcTlv* find_tlv(uint8_t tag) const;
};

// The build metadata that writes `info`'s row again (every parsed field, its delta link
// included): a rescan rebuilding a header, a remote row stored into a local tier.
KvcBuildMeta kvc_build_meta_of(const KvcInfo& info);

// Bytes preceding the payload (header, trailer, prompt, TLVs); the file is
// prefix || payload. payload_crc32c is computed here from `payload`.
Result<std::vector<uint8_t>> kvc_build_prefix(const KvcBuildMeta& meta,
                                              std::span<const uint8_t> payload);
// Same, with a CRC the caller already computed (avoids a second pass).
Result<std::vector<uint8_t>> kvc_build_prefix_with_crc(const KvcBuildMeta& meta,
                                                       uint64_t payload_len, uint32_t crc);

// Header, trailer, prompt and TLVs only; no payload CRC. `bytes` must hold at
// least the prefix; `file_size` is the whole file's size (checked against the
// trailer: truncated or trailing bytes are errors).
Result<KvcInfo> kvc_parse_meta(std::span<const uint8_t> bytes, uint64_t file_size);
inline Result<KvcInfo> kvc_parse_meta(std::span<const uint8_t> whole_file) {
  return kvc_parse_meta(whole_file, whole_file.size());
}
// Full validation: parse_meta, payload CRC32C, and key replay from the TLVs
// against `expected`. On success the payload is bytes[payload_offset..].
Result<KvcInfo> kvc_parse(std::span<const uint8_t> whole_file, const CacheKey& expected);

// CRC32C of a row's prefix (the bytes before the payload) with the in-place fields
// zeroed: what meta_crc32c holds.
uint32_t kvc_meta_crc(std::span<const uint8_t> prefix);

// Whether a delta of n_tokens with payload_len bytes is self-consistent (groups,
// depth, parent_tokens in [1, n_tokens), payload and full sizes agree); the message
// names the bad field.
Status check_delta(const KvcDelta& d, uint64_t n_tokens, uint64_t payload_len);

// The delta layout (the payload as d.groups position-major runs of
// d.bytes_per_position bytes per position): where, in the whole chain's payload of
// n_tokens positions, the positions [first, last) of each group lie, as (offset,
// length) pairs in group order: a link's own payload is these runs concatenated.
std::vector<std::pair<uint64_t, uint64_t>> kvc_delta_runs(const KvcDelta& d, uint64_t n_tokens,
                                                          uint64_t first, uint64_t last);
// A delta's payload cut from the whole payload of n_tokens positions.
std::vector<uint8_t> kvc_cut_delta(std::span<const uint8_t> full, uint64_t n_tokens,
                                   const KvcDelta& d);
// The inverse: the whole payload of n_tokens positions from the parent's whole payload
// (d.parent_tokens positions) and the delta's own payload. The sizes must agree with d
// (check_delta, and the parent's d.groups * d.bytes_per_position * d.parent_tokens).
std::vector<uint8_t> kvc_join_delta(std::span<const uint8_t> parent_full,
                                    std::span<const uint8_t> delta, uint64_t n_tokens,
                                    const KvcDelta& d);

// Reads the 48+24 fixed bytes and returns the total prefix length they imply
// (payload_offset), so a file reader knows how much to read for parse_meta.
Result<uint64_t> kvc_prefix_length(std::span<const uint8_t> first72);

}  // namespace hearth::cache
