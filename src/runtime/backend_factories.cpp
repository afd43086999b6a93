#include "runtime/backend_factories.h"

#include "runtime/cache_row_store.h"
#include "runtime/engine_backend.h"
#include "runtime/stub_backend.h"

namespace hearth::runtime {

Result<BackendFactory> named_backend_factory(const ModelConfig& config) {
  if (config.backend == "stub") {
    StubOptions o;
    if (config.n_ctx > 0) o.n_ctx = config.n_ctx;
    o.n_seq_max = config.n_seq_max;
    if (!config.model_path.empty()) o.model_path = config.model_path;
    return stub_factory(o);
  }
  if (config.backend == "engine") {
    if (config.model_path.empty()) return InvalidArgument("model_path is required");
    return engine_factory(config);
  }
  return InvalidArgument("unknown backend '" + config.backend + "' (expected engine or stub)");
}

Result<std::shared_ptr<RowStore>> make_row_store(const CacheOptions& options) {
  HEARTH_ASSIGN_OR_RETURN(auto store, CacheRowStore::open(options));
  return std::shared_ptr<RowStore>(std::move(store));
}

}  // namespace hearth::runtime
