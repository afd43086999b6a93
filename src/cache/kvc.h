// KVC file format (version 1), little-endian throughout:
//
//   [0..47]   header, 48 bytes:
//               u8[3] "KVC", u8 version=1, u8 quant_bits, u8 save_reason (0..5),
//               u8 flags (bit 0: meta_crc32c present; required), u8 reserved,
//               u32 cached_token_count, u32 hit_count,
//               u32 context_size, u8[4] reserved, u64 creation_time (unix s),
//               u64 last_used_time (unix s), u64 payload_byte_count
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
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hearth/cache/key.h"
#include "hearth/cache/types.h"
#include "hearth/status.h"

namespace hearth::cache {

inline constexpr size_t kKvcHeaderSize = 48;
inline constexpr size_t kKvcTrailerSize = 24;
inline constexpr uint8_t kKvcVersion = 1;
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
};

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
  std::string hostname;         // empty = gethostname()
  std::string version = "hearth 0.1.0";
  std::string save_reason_detail;
  std::vector<KvcTlv> extra_tlvs;  // e.g. kTagLogits; tags 0x01-0x09 are refused
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

  CacheKey key() const { return make_key(ns, tokens); }
  uint64_t file_size() const { return payload_offset + payload_length; }
  const KvcTlv* find_tlv(uint8_t tag) const;
};

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

// Reads the 48+24 fixed bytes and returns the total prefix length they imply
// (payload_offset), so a file reader knows how much to read for parse_meta.
Result<uint64_t> kvc_prefix_length(std::span<const uint8_t> first72);

}  // namespace hearth::cache
