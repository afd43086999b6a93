// libFuzzer target: arbitrary text as `hearth serve --config` TOML. A bad document must
// be an error naming what is wrong and leave the configuration untouched; a good one
// must pass or fail validate_config with a message. No crash, no exception escapes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "hearth/server/server.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hearth::server;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ServerConfig config;
  const ServerConfig before = config;
  hearth::Status s = apply_config_toml(text, config);
  if (!s.ok()) {
    if (s.message().empty()) std::abort();
    if (config.port != before.port || config.models.size() != before.models.size()) std::abort();
    return 0;
  }
  hearth::Status v = validate_config(config);
  if (!v.ok() && v.message().empty()) std::abort();
  return 0;
}
