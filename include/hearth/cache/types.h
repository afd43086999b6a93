// Vocabulary shared by every part of the KV cache: keys, tiers, save reasons, the
// cache-internal quantisation byte. Numeric values are part of the on-disk format
// (KVC header and TLVs) and must never be renumbered.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hearth/sha256.h"

namespace hearth::cache {

// SHA-256(fingerprint || quant_byte || ctx_params_hash || tokens as u32 LE).
using CacheKey = Digest256;
using Token = uint32_t;

enum class Tier : uint8_t { kRam = 0, kRamFile = 1, kDisk = 2 };
inline constexpr int kNumTiers = 3;
const char* tier_name(Tier t);  // "ram", "ram_file", "disk"
std::optional<Tier> tier_from_name(std::string_view name);

// Byte values are the KVC header's save_reason field.
enum class SaveReason : uint8_t {
  kUnknown = 0,
  kCold = 1,
  kContinued = 2,
  kEvict = 3,
  kShutdown = 4,
  kFinish = 5,
};
const char* save_reason_name(SaveReason r);

// TLV 0x02 values.
enum class FingerprintMode : uint8_t { kSafe = 0, kGgufChunked = 1, kFastUnsafe = 2 };
const char* fingerprint_mode_name(FingerprintMode m);

// Stable cache-internal quantisation enumeration (TLV 0x03 and the key's quant
// byte). Decoupled from GGUF tensor type ids on purpose.
enum class QuantType : uint8_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 4,
  kQ5_1 = 5,
  kQ8_0 = 6,
  kQ4_K_M = 7,
  kQ4_K_S = 8,
  kQ5_K_M = 9,
  kQ5_K_S = 10,
  kQ6_K = 11,
  kQ8_K = 12,
};
inline constexpr uint8_t kMaxQuantByte = 12;
const char* quant_type_name(QuantType q);  // "f16", "q4_k_m", ...
std::optional<QuantType> quant_type_from_name(std::string_view name);
std::optional<QuantType> quant_type_from_byte(uint8_t b);

// Row lifecycle in the meta index.
enum class RowStatus : uint8_t { kAvailable = 0, kReserved = 1 };

}  // namespace hearth::cache
