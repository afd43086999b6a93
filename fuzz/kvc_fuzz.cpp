// libFuzzer target: arbitrary bytes as a KVC row file. The metadata parse must refuse
// or accept without a crash, an over-read or a message-less error; an accepted row
// must round-trip (rebuilding its prefix from what was parsed gives a prefix the parser
// accepts with the same tokens and namespace), and kvc_parse must agree with the
// replayed key.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "cache/kvc.h"

// `kvc_fuzz --write-seed=DIR` writes a few valid rows into DIR and exits: the corpus
// starts from real rows (scripts/fuzz.sh), so mutations reach past the checksums.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  using namespace hearth::cache;
  const char* flag = "--write-seed=";
  for (int i = 1; i < *argc; ++i) {
    if (std::strncmp((*argv)[i], flag, std::strlen(flag)) != 0) continue;
    const std::string dir = (*argv)[i] + std::strlen(flag);
    for (uint32_t n : {1u, 7u, 64u}) {
      KvcBuildMeta m;
      m.save_reason = SaveReason::kFinish;
      m.ns.fingerprint.fill(static_cast<uint8_t>(n));
      m.ns.ctx_params_hash.fill(0x5A);
      for (uint32_t t = 0; t < n; ++t) m.tokens.push_back(t * 31 + 7);
      m.prompt_text = "seed";
      m.hostname = "fuzz";
      if (n > 1) m.extra_tlvs.push_back({kTagLogits, std::vector<uint8_t>(4 * n, 0x3F)});
      const std::vector<uint8_t> payload(n * 16, static_cast<uint8_t>(n));
      auto prefix = kvc_build_prefix(m, payload);
      if (!prefix.ok()) std::abort();
      std::ofstream out(dir + "/row-" + std::to_string(n) + ".kvc", std::ios::binary);
      out.write(reinterpret_cast<const char*>(prefix->data()),
                static_cast<std::streamsize>(prefix->size()));
      out.write(reinterpret_cast<const char*>(payload.data()),
                static_cast<std::streamsize>(payload.size()));
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hearth::cache;
  const std::vector<uint8_t> bytes(data, data + size);  // exact size: over-reads hit a redzone
  if (bytes.size() >= kKvcHeaderSize + kKvcTrailerSize) {
    auto len = kvc_prefix_length(std::span(bytes).first(kKvcHeaderSize + kKvcTrailerSize));
    if (!len.ok() && len.status().message().empty()) std::abort();
  }
  auto info = kvc_parse_meta(bytes);
  if (!info.ok()) {
    if (info.status().message().empty()) std::abort();
    return 0;
  }
  auto full = kvc_parse(bytes, info->key());
  if (!full.ok() && full.status().message().empty()) std::abort();

  KvcBuildMeta m = kvc_build_meta_of(*info);
  // 0 and "" mean "now" and "this host" to the builder: keep the parsed bytes instead.
  m.creation_time = info->creation_time ? info->creation_time : 1;
  m.last_used_time = info->last_used_time ? info->last_used_time : 1;
  m.hostname = info->hostname.empty() ? "h" : info->hostname;
  m.extra_tlvs.clear();
  for (const auto& t : info->extra_tlvs) {
    if (t.tag < kTagFingerprint || t.tag > kTagTokenIds) m.extra_tlvs.push_back(t);
  }
  const std::span<const uint8_t> payload(bytes.data() + info->payload_offset, info->payload_length);
  auto prefix = kvc_build_prefix(m, payload);
  if (!prefix.ok()) return 0;  // e.g. a payload too large to rebuild: not a parser bug
  std::vector<uint8_t> rebuilt = *prefix;
  rebuilt.insert(rebuilt.end(), payload.begin(), payload.end());
  auto again = kvc_parse(rebuilt, info->key());
  if (!again.ok() || again->tokens != info->tokens || !(again->ns == info->ns)) std::abort();
  return 0;
}
