// Backend and cache construction by name, so Runtime needs no knowledge of which
// implementations are built in.
#pragma once

#include <memory>

#include "hearth/runtime/runtime.h"
#include "runtime/row_store.h"

namespace hearth::runtime {

// The backend of a model whose ModelConfig::factory is unset: EngineBackend over
// hearth::Engine, loading config.model_path.
Result<BackendFactory> default_backend_factory(const ModelConfig& config);

// The shared row store for a runtime.
Result<std::shared_ptr<RowStore>> make_row_store(const CacheOptions& options);

}  // namespace hearth::runtime
