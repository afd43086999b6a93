// Resolves a model path requested over the API. Loading over HTTP is allowed only
// from the configured models directory: the path is resolved (symlinks and ".."
// included) and must stay inside it, so a client cannot make the server open an
// arbitrary file.
#pragma once

#include <string>

#include "hearth/status.h"

namespace hearth::server {

// `requested` may be relative to models_dir or absolute. Returns the canonical path.
Result<std::string> resolve_model_path(const std::string& models_dir, const std::string& requested);

}  // namespace hearth::server
