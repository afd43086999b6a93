// Builds the production ServiceApi: an adapter over hearth::Runtime configured
// from the server's models and tiers.
#pragma once

#include <memory>

#include "hearth/server.h"
#include "server/service_api.h"

namespace hearth::server {

Result<std::unique_ptr<ServiceApi>> make_runtime_service(const ServerConfig& config);

}  // namespace hearth::server
