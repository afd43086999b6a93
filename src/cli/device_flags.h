// `--device` and `--n-gpu-layers` / `-ngl`: where the model of a command runs
// (docs/gpu.md "Configuration"). One helper for every command that loads a model for
// inference (run, serve, logits, the benches), so the flags are spelled, checked and
// applied the same everywhere: the text goes through hearth::parse_device, the count
// through hearth::check_n_gpu_layers, and the device is checked to exist here
// (hearth::check_device_available) before the model loads.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "hearth/engine/engine.h"
#include "hearth/runtime/runtime.h"
#include "hearth/status.h"

namespace hearth::cli {

struct DeviceFlags {
  std::string device = "cpu";  // "cpu", "cuda", "cuda:N"
  int32_t n_gpu_layers = -1;   // -1: every layer and the output head on the GPU
  // Set by add_device_flags: whether each flag was on the command line.
  const CLI::Option* device_option = nullptr;
  const CLI::Option* layers_option = nullptr;
  bool device_given() const { return device_option && device_option->count() > 0; }
  bool layers_given() const { return layers_option && layers_option->count() > 0; }
};

// Adds --device and --n-gpu-layers (spelled -ngl too: expand_cli_aliases) to `cmd`; a
// malformed value is a usage error naming the flag (exit code 2).
void add_device_flags(CLI::App* cmd, DeviceFlags* flags);

// The flags, checked together and against this build and machine (errors name the flag
// and the value), into the options of an engine or a runtime model.
Status apply_device_flags(const DeviceFlags& flags, EngineOptions& options);
Status apply_device_flags(const DeviceFlags& flags, runtime::ModelConfig& config);

// The arguments with the spellings CLI11 cannot declare replaced by their long names:
// "-ngl" (llama.cpp's) becomes "--n-gpu-layers", "-ngl=N" "--n-gpu-layers=N", and
// "-ngld" "--n-gpu-layers-draft"; nothing after a "--" changes.
std::vector<std::string> expand_cli_aliases(int argc, const char* const* argv);

}  // namespace hearth::cli
