#include "runtime/backend_factories.h"

#include "hearth/engine/device_spec.h"

#include "runtime/cache_row_store.h"
#include "runtime/engine_backend.h"

namespace hearth::runtime {

Status check_engine_device(std::string_view device, int32_t n_gpu_layers,
                           std::string_view device_key, std::string_view layers_key) {
  auto named = [](std::string_view key, const Status& s) {
    return Status(s.code(), std::string(key) + ": " + s.message());
  };
  auto spec = parse_device(device);
  if (!spec.ok()) return named(device_key, spec.status());
  if (Status s = check_n_gpu_layers(n_gpu_layers, *spec); !s.ok()) return named(layers_key, s);
  if (Status s = check_device_available(*spec); !s.ok()) return named(device_key, s);
  return OkStatus();
}

Result<BackendFactory> default_backend_factory(const ModelConfig& config) {
  if (config.model_path.empty()) return InvalidArgument("model_path is required");
  HEARTH_RETURN_IF_ERROR(
      check_engine_device(config.device, config.n_gpu_layers, "device", "n_gpu_layers"));
  return engine_factory(config);
}

Result<std::shared_ptr<RowStore>> make_row_store(const CacheOptions& options) {
  HEARTH_ASSIGN_OR_RETURN(auto store, CacheRowStore::open(options));
  return std::shared_ptr<RowStore>(std::move(store));
}

}  // namespace hearth::runtime
