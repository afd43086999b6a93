#include "hearth/engine/device_spec.h"

#include <charconv>
#include <cstdint>

#if HEARTH_HAVE_CUDA
#include "engine/cuda/cuda_api.h"
#endif

namespace hearth {
namespace {

Status bad_device(std::string_view text) {
  return InvalidArgument("expected \"cpu\", \"cuda\" or \"cuda:N\" (N in 0.." +
                         std::to_string(kMaxCudaDevice) + "), got \"" + std::string(text) + "\"");
}

}  // namespace

std::string DeviceSpec::name() const {
  return is_cpu() ? "cpu" : "cuda:" + std::to_string(index);
}

Result<DeviceSpec> parse_device(std::string_view text) {
  if (text == "cpu") return DeviceSpec{};
  if (text == "cuda") return DeviceSpec{DeviceSpec::Kind::kCuda, 0};
  constexpr std::string_view kPrefix = "cuda:";
  if (!text.starts_with(kPrefix)) return bad_device(text);
  const std::string_view digits = text.substr(kPrefix.size());
  // Decimal digits only: from_chars alone would take a leading '-' and stop at junk.
  if (digits.empty() || digits.size() > 3 ||
      digits.find_first_not_of("0123456789") != std::string_view::npos)
    return bad_device(text);
  int32_t index = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (index > kMaxCudaDevice) return bad_device(text);
  return DeviceSpec{DeviceSpec::Kind::kCuda, index};
}

Status check_n_gpu_layers(int64_t n_gpu_layers, const DeviceSpec& device) {
  if (n_gpu_layers < -1 || n_gpu_layers > INT32_MAX)
    return InvalidArgument("expected -1 (every layer on the GPU) or a layer count >= 0, got " +
                           std::to_string(n_gpu_layers));
  if (n_gpu_layers > 0 && device.is_cpu())
    return InvalidArgument(std::to_string(n_gpu_layers) +
                           " layers on a GPU need a GPU device (\"cuda\" or \"cuda:N\"); the "
                           "device is \"cpu\"");
  return OkStatus();
}

bool built_with_cuda() {
#if HEARTH_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

Status check_device_available(const DeviceSpec& device) {
  if (device.is_cpu()) return OkStatus();
#if HEARTH_HAVE_CUDA
  std::string why;
  if (engine::cuda::available(device.index, &why)) return OkStatus();
  return Unsupported("device " + device.name() + " is not usable here: " + why);
#else
  return Unsupported("device " + device.name() +
                     ": this hearth was built without CUDA (rebuild with HEARTH_CUDA=1, "
                     "docs/gpu.md)");
#endif
}

}  // namespace hearth
