// Backend and cache construction by name, so Runtime needs no knowledge of which
// implementations are built in.
#pragma once

#include <memory>

#include "hearth/runtime/runtime.h"
#include "runtime/row_store.h"

namespace hearth::runtime {

// The backend of a model whose ModelConfig::factory is unset: EngineBackend over
// hearth::Engine, loading config.model_path. Checks the device settings first
// (check_engine_device with the keys "device" and "n_gpu_layers").
Result<BackendFactory> default_backend_factory(const ModelConfig& config);

// The engine's device settings (ModelConfig::device / n_gpu_layers, or the draft's): the
// device parses (hearth::parse_device), the layer count fits it, and this build and
// machine have the device (hearth::check_device_available). Errors name `device_key` or
// `layers_key` and the value.
Status check_engine_device(std::string_view device, int32_t n_gpu_layers,
                           std::string_view device_key, std::string_view layers_key);

// The shared row store for a runtime.
Result<std::shared_ptr<RowStore>> make_row_store(const CacheOptions& options);

}  // namespace hearth::runtime
