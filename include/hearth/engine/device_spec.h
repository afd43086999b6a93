// Where a model's layers run (EngineOptions::device, docs/gpu.md "Configuration"): the
// one parser of the device text ("cpu", "cuda", "cuda:N") and of the GPU layer count,
// used by every place that takes them (the engine, the runtime, the CLI flags, the
// server's model settings), and the check that this build and machine have the device.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hearth/status.h"

namespace hearth {

struct DeviceSpec {
  enum class Kind : uint8_t { kCpu, kCuda };
  Kind kind = Kind::kCpu;
  int32_t index = 0;  // the CUDA device ordinal (kCuda only)

  bool is_cpu() const { return kind == Kind::kCpu; }
  // The canonical text: "cpu" or "cuda:N" ("cuda" reads as "cuda:0").
  std::string name() const;
  bool operator==(const DeviceSpec&) const = default;
};

// The most CUDA devices a spec may name (cuda:0 .. cuda:255).
inline constexpr int32_t kMaxCudaDevice = 255;

// "cpu", "cuda" (device 0) or "cuda:N" with N decimal digits in 0..kMaxCudaDevice;
// exact and lower case. InvalidArgument for anything else ("gpu", "cuda:x", "cuda:-1",
// "CUDA:0", " cpu"): the message quotes the text and lists the accepted forms, without
// naming a key, so each caller prefixes its own ("--device: ", "device: ").
Result<DeviceSpec> parse_device(std::string_view text);

// n_gpu_layers: -1 (every layer and the output head on the GPU) or a count >= 0 (the
// first N layers; N >= the model's layers is the same as -1). The count is only
// meaningful on a GPU: a count > 0 with a CPU device is refused rather than ignored.
// InvalidArgument without a key name, as parse_device.
Status check_n_gpu_layers(int64_t n_gpu_layers, const DeviceSpec& device);

// Whether this build and this machine can run `device`: always for the CPU; for CUDA,
// Unsupported when hearth was built without CUDA (HEARTH_CUDA=ON), or when the device
// is absent or unusable (no driver, no such ordinal), naming the device ("cuda:7") and
// saying why.
Status check_device_available(const DeviceSpec& device);

// Whether this hearth was built with the CUDA backend (HEARTH_CUDA=ON).
bool built_with_cuda();

}  // namespace hearth
