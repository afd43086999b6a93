#include "runtime/backend_factories.h"

#include "runtime/cache_row_store.h"
#include "runtime/engine_backend.h"

namespace hearth::runtime {

Result<BackendFactory> default_backend_factory(const ModelConfig& config) {
  if (config.model_path.empty()) return InvalidArgument("model_path is required");
  return engine_factory(config);
}

Result<std::shared_ptr<RowStore>> make_row_store(const CacheOptions& options) {
  HEARTH_ASSIGN_OR_RETURN(auto store, CacheRowStore::open(options));
  return std::shared_ptr<RowStore>(std::move(store));
}

}  // namespace hearth::runtime
