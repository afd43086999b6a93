#include "server/runtime_service.h"

namespace hearth::server {

Result<std::unique_ptr<ServiceApi>> make_runtime_service(const ServerConfig& /*config*/) {
  return Unavailable("the inference runtime is not built into this hearth yet; "
                     "use --backend fake to exercise the HTTP API");
}

}  // namespace hearth::server
