// libFuzzer target: arbitrary bytes through GgufFile::parse. Any crash, sanitizer
// report, hang or error without a message is a bug. When a file loads, every
// tensor's bytes are touched so that out-of-range pointers trip ASan.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "hearth/gguf/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exact-size copy: reads past the end land in ASan's redzone.
  std::vector<uint8_t> bytes(data, data + size);
  auto f = hearth::gguf::GgufFile::parse(bytes);
  if (!f.ok()) {
    if (f.status().message().empty()) std::abort();
    return 0;
  }
  uint64_t sum = 0;
  for (const auto& t : f->tensors()) {
    if (t.n_bytes == 0) continue;
    sum += t.data[0] + t.data[t.n_bytes - 1];
  }
  for (const auto& [key, value] : f->metadata()) sum += key.size() + (value == value ? 1 : 0);
  volatile uint64_t sink = sum;
  (void)sink;
  return 0;
}
