// KVC framing. Layout documented in src/cache/kvc.h.
#include "cache/kvc.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>

#include "cache/crc32c.h"

namespace hearth::cache {
namespace {

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
uint32_t get_u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint64_t get_u64(const uint8_t* p) {
  return uint64_t(get_u32(p)) | uint64_t(get_u32(p + 4)) << 32;
}

void put_tlv(std::vector<uint8_t>& out, uint8_t tag, const void* v, size_t n) {
  out.push_back(tag);
  put_u32(out, static_cast<uint32_t>(n));
  const auto* b = static_cast<const uint8_t*>(v);
  out.insert(out.end(), b, b + n);
}

std::string local_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// Bounds-checked cursor over the prefix bytes.
struct Reader {
  std::span<const uint8_t> b;
  size_t pos = 0;
  bool take(size_t n, const uint8_t** out) {
    if (b.size() - pos < n) return false;
    *out = b.data() + pos;
    pos += n;
    return true;
  }
};

std::vector<uint8_t> encode_delta(const KvcDelta& d) {
  std::vector<uint8_t> out(d.parent_key.begin(), d.parent_key.end());
  put_u32(out, d.parent_tokens);
  put_u32(out, d.groups);
  put_u32(out, d.depth);
  put_u32(out, 0);
  put_u64(out, d.full_payload_bytes);
  put_u64(out, d.bytes_per_position);
  return out;
}

Result<KvcDelta> decode_delta(std::span<const uint8_t> v) {
  if (v.size() != kKvcDeltaTlvSize) {
    return DataLoss("kvc: delta TLV 0x0B is " + std::to_string(v.size()) + " bytes, not " +
                    std::to_string(kKvcDeltaTlvSize));
  }
  KvcDelta d;
  std::memcpy(d.parent_key.data(), v.data(), 32);
  d.parent_tokens = get_u32(v.data() + 32);
  d.groups = get_u32(v.data() + 36);
  d.depth = get_u32(v.data() + 40);
  if (get_u32(v.data() + 44) != 0) return DataLoss("kvc: delta TLV reserved field is not 0");
  d.full_payload_bytes = get_u64(v.data() + 48);
  d.bytes_per_position = get_u64(v.data() + 56);
  return d;
}

}  // namespace

Status check_delta(const KvcDelta& d, uint64_t n_tokens, uint64_t payload_len) {
  if (d.groups == 0) return InvalidArgument("kvc: delta groups is 0");
  if (d.depth == 0) return InvalidArgument("kvc: delta depth is 0");
  if (d.parent_tokens == 0 || d.parent_tokens >= n_tokens) {
    return InvalidArgument("kvc: delta parent_tokens " + std::to_string(d.parent_tokens) +
                           " is outside [1, " + std::to_string(n_tokens) + ")");
  }
  if (d.bytes_per_position == 0 || d.bytes_per_position > (1ull << 32)) {
    return InvalidArgument("kvc: delta bytes_per_position " + std::to_string(d.bytes_per_position) +
                           " is out of range");
  }
  const uint64_t per_pos = uint64_t(d.groups) * d.bytes_per_position;
  if (per_pos * (n_tokens - d.parent_tokens) != payload_len) {
    return InvalidArgument("kvc: delta payload_length " + std::to_string(payload_len) +
                           " is not groups * bytes_per_position * new positions (" +
                           std::to_string(per_pos * (n_tokens - d.parent_tokens)) + ")");
  }
  if (per_pos * n_tokens != d.full_payload_bytes) {
    return InvalidArgument("kvc: delta full_payload_bytes " + std::to_string(d.full_payload_bytes) +
                           " is not " + std::to_string(per_pos * n_tokens));
  }
  return OkStatus();
}

std::vector<std::pair<uint64_t, uint64_t>> kvc_delta_runs(const KvcDelta& d, uint64_t n_tokens,
                                                          uint64_t first, uint64_t last) {
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  runs.reserve(d.groups);
  const uint64_t group_bytes = n_tokens * d.bytes_per_position;
  for (uint64_t g = 0; g < d.groups; ++g) {
    runs.emplace_back(g * group_bytes + first * d.bytes_per_position,
                      (last - first) * d.bytes_per_position);
  }
  return runs;
}

std::vector<uint8_t> kvc_cut_delta(std::span<const uint8_t> full, uint64_t n_tokens,
                                   const KvcDelta& d) {
  std::vector<uint8_t> out;
  out.reserve(d.groups * (n_tokens - d.parent_tokens) * d.bytes_per_position);
  for (const auto& [off, len] : kvc_delta_runs(d, n_tokens, d.parent_tokens, n_tokens)) {
    out.insert(out.end(), full.begin() + static_cast<ptrdiff_t>(off),
               full.begin() + static_cast<ptrdiff_t>(off + len));
  }
  return out;
}

std::vector<uint8_t> kvc_join_delta(std::span<const uint8_t> parent_full,
                                    std::span<const uint8_t> delta, uint64_t n_tokens,
                                    const KvcDelta& d) {
  std::vector<uint8_t> out(d.full_payload_bytes);
  auto scatter = [&](std::span<const uint8_t> src, uint64_t first, uint64_t last) {
    uint64_t at = 0;
    for (const auto& [off, len] : kvc_delta_runs(d, n_tokens, first, last)) {
      std::memcpy(out.data() + off, src.data() + at, len);
      at += len;
    }
  };
  scatter(parent_full, 0, d.parent_tokens);
  scatter(delta, d.parent_tokens, n_tokens);
  return out;
}

uint32_t kvc_meta_crc(std::span<const uint8_t> prefix) {
  // The fields a reader may rewrite in place (hit_count, last_used_time) and the
  // checksum itself count as zeros: every other byte before the payload is covered.
  struct Hole {
    size_t at, len;
  };
  static constexpr Hole kHoles[] = {
      {kKvcHitCountOffset, 4}, {kKvcLastUsedOffset, 8}, {kKvcMetaCrcOffset, 4}};
  static constexpr uint8_t kZeros[8] = {};
  uint32_t crc = 0;
  size_t pos = 0;
  for (const Hole& h : kHoles) {
    if (h.at >= prefix.size()) break;
    crc = crc32c_extend(crc, prefix.data() + pos, h.at - pos);
    const size_t n = std::min(h.len, prefix.size() - h.at);
    crc = crc32c_extend(crc, kZeros, n);
    pos = h.at + n;
  }
  if (pos < prefix.size()) crc = crc32c_extend(crc, prefix.data() + pos, prefix.size() - pos);
  return crc;
}

const KvcTlv* KvcInfo::find_tlv(uint8_t tag) const {
  for (const auto& t : extra_tlvs) {
    if (t.tag == tag) return &t;
  }
  return nullptr;
}

Result<std::vector<uint8_t>> kvc_build_prefix(const KvcBuildMeta& meta,
                                              std::span<const uint8_t> payload) {
  return kvc_build_prefix_with_crc(meta, payload.size(), crc32c(payload.data(), payload.size()));
}

Result<std::vector<uint8_t>> kvc_build_prefix_with_crc(const KvcBuildMeta& meta,
                                                       uint64_t payload_len, uint32_t crc) {
  if (static_cast<uint8_t>(meta.save_reason) > 5)
    return InvalidArgument("save_reason out of range");
  if (static_cast<uint8_t>(meta.ns.quant) > kMaxQuantByte) {
    return InvalidArgument("quant type byte out of range");
  }
  if (static_cast<uint8_t>(meta.fingerprint_mode) > 2) {
    return InvalidArgument("fingerprint_mode out of range");
  }
  if (meta.tokens.size() > UINT32_MAX / 4) return InvalidArgument("too many tokens");
  for (const auto& t : meta.extra_tlvs) {
    if ((t.tag >= kTagFingerprint && t.tag <= kTagTokenIds) || t.tag == kTagDelta) {
      return InvalidArgument("extra TLV uses reserved tag " + std::to_string(t.tag));
    }
  }

  std::vector<uint8_t> tlv;
  tlv.reserve(128 + meta.tokens.size() * 4);
  put_tlv(tlv, kTagFingerprint, meta.ns.fingerprint.data(), 32);
  uint8_t mode = static_cast<uint8_t>(meta.fingerprint_mode);
  put_tlv(tlv, kTagFingerprintMode, &mode, 1);
  uint8_t quant = static_cast<uint8_t>(meta.ns.quant);
  put_tlv(tlv, kTagQuantType, &quant, 1);
  put_tlv(tlv, kTagCtxParamsHash, meta.ns.ctx_params_hash.data(), 32);
  uint8_t count_le[4];
  uint32_t n_tokens = static_cast<uint32_t>(meta.tokens.size());
  for (int i = 0; i < 4; ++i) count_le[i] = uint8_t(n_tokens >> (8 * i));
  put_tlv(tlv, kTagTokenIdCount, count_le, 4);
  std::vector<uint8_t> enc = encode_tokens(meta.tokens);
  put_tlv(tlv, kTagTokenIds, enc.data(), enc.size());
  std::string host = meta.hostname.empty() ? local_hostname() : meta.hostname;
  put_tlv(tlv, kTagHostname, host.data(), host.size());
  if (!meta.version.empty()) put_tlv(tlv, kTagVersion, meta.version.data(), meta.version.size());
  if (!meta.save_reason_detail.empty()) {
    put_tlv(tlv, kTagSaveReasonDetail, meta.save_reason_detail.data(),
            meta.save_reason_detail.size());
  }
  for (const auto& t : meta.extra_tlvs) put_tlv(tlv, t.tag, t.value.data(), t.value.size());
  if (meta.delta) {
    HEARTH_RETURN_IF_ERROR(check_delta(*meta.delta, meta.tokens.size(), payload_len));
    std::vector<uint8_t> d = encode_delta(*meta.delta);
    put_tlv(tlv, kTagDelta, d.data(), d.size());
  }

  uint64_t payload_offset =
      kKvcHeaderSize + kKvcTrailerSize + 4 + meta.prompt_text.size() + 4 + tlv.size();
  uint64_t now = static_cast<uint64_t>(std::time(nullptr));

  std::vector<uint8_t> out;
  out.reserve(payload_offset);
  const uint8_t version = meta.delta ? kKvcDeltaVersion : kKvcVersion;
  out.insert(out.end(), {'K', 'V', 'C', version, meta.quant_bits,
                         static_cast<uint8_t>(meta.save_reason), kKvcFlagMetaCrc, 0});
  put_u32(out, n_tokens);
  put_u32(out, meta.hit_count);
  put_u32(out, meta.context_size);
  put_u32(out, 0);
  put_u64(out, meta.creation_time ? meta.creation_time : now);
  put_u64(out, meta.last_used_time ? meta.last_used_time : now);
  put_u64(out, payload_len);
  // trailer
  put_u64(out, payload_offset);
  put_u64(out, payload_len);
  put_u32(out, crc);
  put_u32(out, 0);  // meta_crc32c, filled below
  put_u32(out, static_cast<uint32_t>(meta.prompt_text.size()));
  out.insert(out.end(), meta.prompt_text.begin(), meta.prompt_text.end());
  put_u32(out, static_cast<uint32_t>(tlv.size()));
  out.insert(out.end(), tlv.begin(), tlv.end());
  const uint32_t meta_crc = kvc_meta_crc(out);
  for (int i = 0; i < 4; ++i) out[kKvcMetaCrcOffset + i] = uint8_t(meta_crc >> (8 * i));
  return out;
}

Result<uint64_t> kvc_prefix_length(std::span<const uint8_t> first72) {
  if (first72.size() < kKvcHeaderSize + kKvcTrailerSize)
    return DataLoss("kvc: file shorter than header+trailer");
  if (std::memcmp(first72.data(), "KVC", 3) != 0) return DataLoss("kvc: bad magic");
  uint64_t po = get_u64(first72.data() + kKvcHeaderSize);
  if (po < kKvcHeaderSize + kKvcTrailerSize + 8) return DataLoss("kvc: payload_offset too small");
  if (po > (1ull << 32)) return DataLoss("kvc: payload_offset implausibly large");
  return po;
}

Result<KvcInfo> kvc_parse_meta(std::span<const uint8_t> bytes, uint64_t file_size) {
  KvcInfo info;
  Reader r{bytes};
  const uint8_t* h;
  if (!r.take(kKvcHeaderSize, &h)) return DataLoss("kvc: truncated header");
  if (std::memcmp(h, "KVC", 3) != 0) return DataLoss("kvc: bad magic");
  info.version = h[3];
  if (info.version != kKvcVersion && info.version != kKvcDeltaVersion) {
    return DataLoss("kvc: unsupported version " + std::to_string(info.version));
  }
  if (h[6] != kKvcFlagMetaCrc || h[7] != 0) {
    return DataLoss("kvc: header flags " + std::to_string(h[6]) + "/" + std::to_string(h[7]) +
                    " unsupported (a row without a metadata checksum is never trusted)");
  }
  info.quant_bits = h[4];
  if (h[5] > 5) return DataLoss("kvc: unknown save_reason " + std::to_string(h[5]));
  info.save_reason = static_cast<SaveReason>(h[5]);
  info.cached_token_count = get_u32(h + 8);
  info.hit_count = get_u32(h + 12);
  info.context_size = get_u32(h + 16);
  info.creation_time = get_u64(h + 24);
  info.last_used_time = get_u64(h + 32);
  info.payload_byte_count = get_u64(h + 40);

  const uint8_t* t;
  if (!r.take(kKvcTrailerSize, &t)) return DataLoss("kvc: truncated trailer");
  info.payload_offset = get_u64(t);
  info.payload_length = get_u64(t + 8);
  info.payload_crc32c = get_u32(t + 16);
  // Nothing past the fixed fields is interpreted before the metadata checksum holds:
  // the stored logits, tokens and lengths steer a restore.
  if (info.payload_offset > bytes.size()) return DataLoss("kvc: truncated metadata");
  if (info.payload_offset < kKvcHeaderSize + kKvcTrailerSize + 8) {
    return DataLoss("kvc: payload_offset too small");
  }
  if (kvc_meta_crc(bytes.first(info.payload_offset)) != get_u32(t + 20)) {
    return DataLoss("kvc: metadata crc32c mismatch");
  }

  const uint8_t* p;
  if (!r.take(4, &p)) return DataLoss("kvc: truncated prompt length");
  uint32_t prompt_len = get_u32(p);
  if (!r.take(prompt_len, &p)) return DataLoss("kvc: truncated prompt section");
  info.prompt_text.assign(reinterpret_cast<const char*>(p), prompt_len);

  if (!r.take(4, &p)) return DataLoss("kvc: truncated TLV length");
  uint32_t tlv_len = get_u32(p);
  const uint8_t* tlv;
  if (!r.take(tlv_len, &tlv)) return DataLoss("kvc: truncated TLV section");

  bool have_fp = false, have_mode = false, have_quant = false, have_ctx = false,
       have_tokens = false;
  int64_t count_tlv = -1;
  size_t pos = 0;
  while (pos < tlv_len) {
    if (tlv_len - pos < 5) return DataLoss("kvc: bad TLV record header");
    uint8_t tag = tlv[pos];
    uint32_t len = get_u32(tlv + pos + 1);
    pos += 5;
    if (tlv_len - pos < len) return DataLoss("kvc: TLV value overruns section");
    const uint8_t* v = tlv + pos;
    pos += len;
    switch (tag) {
      case kTagFingerprint:
        if (len != 32) return DataLoss("kvc: fingerprint TLV is not 32 bytes");
        std::memcpy(info.ns.fingerprint.data(), v, 32);
        have_fp = true;
        break;
      case kTagFingerprintMode:
        if (len != 1 || v[0] > 2) return DataLoss("kvc: bad fingerprint_mode TLV");
        info.fingerprint_mode = static_cast<FingerprintMode>(v[0]);
        have_mode = true;
        break;
      case kTagQuantType: {
        if (len != 1) return DataLoss("kvc: bad quant_type TLV");
        auto q = quant_type_from_byte(v[0]);
        if (!q) return DataLoss("kvc: unknown quant byte " + std::to_string(v[0]));
        info.ns.quant = *q;
        have_quant = true;
        break;
      }
      case kTagCtxParamsHash:
        if (len != 32) return DataLoss("kvc: ctx_params_hash TLV is not 32 bytes");
        std::memcpy(info.ns.ctx_params_hash.data(), v, 32);
        have_ctx = true;
        break;
      case kTagHostname:
        info.hostname.assign(reinterpret_cast<const char*>(v), len);
        break;
      case kTagVersion:
        info.version_string.assign(reinterpret_cast<const char*>(v), len);
        break;
      case kTagSaveReasonDetail:
        info.save_reason_detail.assign(reinterpret_cast<const char*>(v), len);
        break;
      case kTagTokenIdCount:
        if (len != 4) return DataLoss("kvc: bad token_id_count TLV");
        count_tlv = get_u32(v);
        break;
      case kTagTokenIds: {
        auto toks = decode_tokens({v, len});
        if (!toks.ok()) return DataLoss("kvc: token_ids TLV length not a multiple of 4");
        info.tokens = std::move(toks).value();
        have_tokens = true;
        break;
      }
      case kTagDelta: {
        if (info.version != kKvcDeltaVersion) {
          return DataLoss("kvc: delta TLV 0x0B in a version-" + std::to_string(info.version) +
                          " (full) row");
        }
        auto d = decode_delta({v, len});
        if (!d.ok()) return d.status();
        info.delta = *d;
        break;
      }
      default:  // forward compatible: keep, do not interpret
        info.extra_tlvs.push_back({tag, std::vector<uint8_t>(v, v + len)});
        break;
    }
  }
  if (!have_fp) return DataLoss("kvc: missing fingerprint TLV");
  if (!have_mode) return DataLoss("kvc: missing fingerprint_mode TLV");
  if (!have_quant) return DataLoss("kvc: missing quant_type TLV");
  if (!have_ctx) return DataLoss("kvc: missing ctx_params_hash TLV");
  if (!have_tokens) return DataLoss("kvc: missing token_ids TLV");
  if (count_tlv >= 0 && static_cast<uint64_t>(count_tlv) != info.tokens.size()) {
    return DataLoss("kvc: token_id_count disagrees with token_ids");
  }
  if (info.cached_token_count != info.tokens.size()) {
    return DataLoss("kvc: header token count disagrees with token_ids");
  }
  if (info.payload_length != info.payload_byte_count) {
    return DataLoss("kvc: payload_length_mismatch");
  }
  if (info.payload_offset != r.pos) return DataLoss("kvc: payload_offset does not follow TLVs");
  if (info.version == kKvcDeltaVersion) {
    if (!info.delta) return DataLoss("kvc: version-2 (delta) row without its delta TLV 0x0B");
    Status ds = check_delta(*info.delta, info.tokens.size(), info.payload_length);
    if (!ds.ok()) return DataLoss(ds.message());
    // The parent's key replays over this row's own leading tokens: a delta can only name
    // a parent of its own namespace whose tokens prefix its own.
    const std::span<const Token> head(info.tokens.data(), info.delta->parent_tokens);
    if (make_key(info.ns, head) != info.delta->parent_key) {
      return DataLoss("kvc: delta parent_key is not the key of this row's first " +
                      std::to_string(info.delta->parent_tokens) + " tokens");
    }
  }
  if (file_size < info.payload_offset + info.payload_length) return DataLoss("kvc: truncated");
  if (file_size != info.payload_offset + info.payload_length)
    return DataLoss("kvc: trailing_bytes");
  return info;
}

Result<KvcInfo> kvc_parse(std::span<const uint8_t> whole_file, const CacheKey& expected) {
  HEARTH_ASSIGN_OR_RETURN(KvcInfo info, kvc_parse_meta(whole_file, whole_file.size()));
  uint32_t crc = crc32c(whole_file.data() + info.payload_offset, info.payload_length);
  if (crc != info.payload_crc32c) return DataLoss("kvc: payload crc32c mismatch");
  if (info.key() != expected) return DataLoss("kvc: key replay mismatch");
  return info;
}

KvcBuildMeta kvc_build_meta_of(const KvcInfo& info) {
  KvcBuildMeta m;
  m.save_reason = info.save_reason;
  m.quant_bits = info.quant_bits;
  m.ns = info.ns;
  m.fingerprint_mode = info.fingerprint_mode;
  m.tokens = info.tokens;
  m.context_size = info.context_size;
  m.creation_time = info.creation_time;
  m.last_used_time = info.last_used_time;
  m.hit_count = info.hit_count;
  m.prompt_text = info.prompt_text;
  m.hostname = info.hostname;
  m.version = info.version_string;
  m.save_reason_detail = info.save_reason_detail;
  m.extra_tlvs = info.extra_tlvs;
  m.delta = info.delta;
  return m;
}

}  // namespace hearth::cache
