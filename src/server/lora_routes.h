// LoRA adapter administration over HTTP (docs/api.md "LoRA adapters"): llama-server's
// GET / POST /lora-adapters, and hearth's /hearth/models/{id}/lora routes that also load
// and unload adapters.
#pragma once

#include <optional>
#include <string>

#include "hearth/runtime/runtime.h"
#include "server/api_error.h"
#include "server/http_util.h"

namespace hearth::server {

// One {"path", "scale"} object (POST /hearth/models' lora list, POST
// /hearth/models/{id}/lora): the path resolved under --models-dir as a model's is.
std::optional<ApiError> adapter_from_json(ServerContext& ctx, const nlohmann::json& value,
                                          const std::string& field, runtime::AdapterSpec& out);

void register_lora_routes(httplib::Server& http, ServerContext& ctx);

}  // namespace hearth::server
