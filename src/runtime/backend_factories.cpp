#include "runtime/backend_factories.h"

#include "runtime/memory_row_store.h"
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
  if (config.backend == "engine")
    return Unsupported("the engine backend is not built into this runtime yet");
  return InvalidArgument("unknown backend '" + config.backend + "' (expected engine or stub)");
}

Result<std::shared_ptr<RowStore>> make_row_store(const CacheOptions& options) {
  auto store = std::make_shared<MemoryRowStore>(options.ram_bytes);
  store->set_publish_delay(std::chrono::milliseconds(options.testing_publish_delay_ms));
  return std::shared_ptr<RowStore>(std::move(store));
}

}  // namespace hearth::runtime
