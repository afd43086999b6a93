#include "cli/device_flags.h"

#include <string_view>
#include <utility>

#include "hearth/engine/device_spec.h"

namespace hearth::cli {
namespace {

// The checked device of the flags; errors name the flag and the value.
Result<DeviceSpec> checked_device(const DeviceFlags& flags) {
  auto spec = parse_device(flags.device);
  if (!spec.ok()) return InvalidArgument("--device: " + spec.status().message());
  if (Status s = check_n_gpu_layers(flags.n_gpu_layers, *spec); !s.ok())
    return InvalidArgument("--n-gpu-layers " + std::to_string(flags.n_gpu_layers) + ": " +
                           s.message());
  if (Status s = check_device_available(*spec); !s.ok())
    return Status(s.code(), "--device: " + s.message());
  return spec;
}

}  // namespace

void add_device_flags(CLI::App* cmd, DeviceFlags* flags) {
  flags->device_option =
      cmd->add_option("--device", flags->device,
                      "where the model's layers run: cpu (default), cuda or cuda:N (GPU N; "
                      "needs a build with HEARTH_CUDA=1, docs/gpu.md)")
          ->check(
              [](const std::string& v) {
                auto s = parse_device(v);
                return s.ok() ? std::string() : s.status().message();
              },
              "DEVICE");
  flags->layers_option =
      cmd->add_option("--n-gpu-layers", flags->n_gpu_layers,
                      "with a GPU --device: how many of the first layers run on it, the rest "
                      "on the CPU (default -1: every layer and the output head; also -ngl)")
          ->check(CLI::Range(-1, INT32_MAX));
}

Status apply_device_flags(const DeviceFlags& flags, EngineOptions& options) {
  HEARTH_ASSIGN_OR_RETURN(const DeviceSpec spec, checked_device(flags));
  options.device = spec.name();
  options.n_gpu_layers = flags.n_gpu_layers;
  return OkStatus();
}

Status apply_device_flags(const DeviceFlags& flags, runtime::ModelConfig& config) {
  HEARTH_ASSIGN_OR_RETURN(const DeviceSpec spec, checked_device(flags));
  config.device = spec.name();
  config.n_gpu_layers = flags.n_gpu_layers;
  return OkStatus();
}

std::vector<std::string> expand_cli_aliases(int argc, const char* const* argv) {
  static constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
      {"-ngl", "--n-gpu-layers"},
      {"-ngld", "--n-gpu-layers-draft"},
  };
  std::vector<std::string> out;
  bool positional = false;  // after "--": values, never options
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (i > 0 && !positional) {
      if (arg == "--") positional = true;
      for (const auto& [alias, name] : kAliases) {
        if (arg == alias) {
          arg = name;
          break;
        }
        if (arg.starts_with(alias) && arg.size() > alias.size() && arg[alias.size()] == '=') {
          arg = std::string(name).append(arg.substr(alias.size()));
          break;
        }
      }
    }
    out.push_back(std::move(arg));
  }
  return out;
}

}  // namespace hearth::cli
