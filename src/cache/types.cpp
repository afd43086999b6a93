#include "hearth/cache/types.h"

#include <array>

namespace hearth::cache {
namespace {

constexpr std::array<const char*, kMaxQuantByte + 1> kQuantNames = {
    "f32", "f16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0",
    "q4_k_m", "q4_k_s", "q5_k_m", "q5_k_s", "q6_k", "q8_k"};

}  // namespace

const char* tier_name(Tier t) {
  switch (t) {
    case Tier::kRam: return "ram";
    case Tier::kRamFile: return "ram_file";
    case Tier::kDisk: return "disk";
  }
  return "?";
}

std::optional<Tier> tier_from_name(std::string_view name) {
  if (name == "ram") return Tier::kRam;
  if (name == "ram_file") return Tier::kRamFile;
  if (name == "disk") return Tier::kDisk;
  return std::nullopt;
}

const char* save_reason_name(SaveReason r) {
  switch (r) {
    case SaveReason::kUnknown: return "unknown";
    case SaveReason::kCold: return "cold";
    case SaveReason::kContinued: return "continued";
    case SaveReason::kEvict: return "evict";
    case SaveReason::kShutdown: return "shutdown";
    case SaveReason::kFinish: return "finish";
  }
  return "?";
}

const char* fingerprint_mode_name(FingerprintMode m) {
  switch (m) {
    case FingerprintMode::kSafe: return "safe";
    case FingerprintMode::kGgufChunked: return "gguf_chunked";
    case FingerprintMode::kFastUnsafe: return "fast_unsafe";
  }
  return "?";
}

const char* quant_type_name(QuantType q) {
  auto b = static_cast<uint8_t>(q);
  return b <= kMaxQuantByte ? kQuantNames[b] : "?";
}

std::optional<QuantType> quant_type_from_name(std::string_view name) {
  for (uint8_t b = 0; b <= kMaxQuantByte; ++b) {
    if (name == kQuantNames[b]) return static_cast<QuantType>(b);
  }
  return std::nullopt;
}

std::optional<QuantType> quant_type_from_byte(uint8_t b) {
  if (b > kMaxQuantByte) return std::nullopt;
  return static_cast<QuantType>(b);
}

}  // namespace hearth::cache
