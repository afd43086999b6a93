// Builds the production ServiceApi: an adapter over hearth::Runtime configured
// from the server's models and tiers.
#pragma once

#include <functional>
#include <memory>

#include "hearth/runtime/runtime.h"
#include "hearth/server/server.h"
#include "server/service_api.h"

namespace hearth::server {

struct RuntimeServiceOptions {
  // Picks the backend of every model the service loads (at start and through POST
  // /hearth/models), given the runtime config built from the model's settings. Unset,
  // or returning an empty factory, is the engine loading the model's GGUF. The
  // extension point for an embedder's own backend; the HTTP tests put the runtime's
  // deterministic stub here.
  std::function<runtime::BackendFactory(const runtime::ModelConfig&)> backend_for;
};

Result<std::unique_ptr<ServiceApi>> make_runtime_service(const ServerConfig& config,
                                                         RuntimeServiceOptions options = {});

}  // namespace hearth::server
