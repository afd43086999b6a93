#include "server/model_path.h"

#include <filesystem>

namespace hearth::server {

namespace fs = std::filesystem;

Result<std::string> resolve_model_path(const std::string& models_dir,
                                       const std::string& requested) {
  if (models_dir.empty()) {
    return Unsupported(
        "path: loading models over the API is disabled (start the server with --models-dir DIR)");
  }
  if (requested.empty()) return InvalidArgument("path: must not be empty");
  if (requested.find('\0') != std::string::npos)
    return InvalidArgument("path: contains a NUL byte");
  std::error_code ec;
  const fs::path root = fs::canonical(models_dir, ec);
  if (ec) return IoError("models_dir '" + models_dir + "' is not accessible: " + ec.message());
  fs::path candidate = fs::path(requested).is_absolute() ? fs::path(requested) : root / requested;
  const fs::path resolved = fs::weakly_canonical(candidate, ec);
  if (ec) return InvalidArgument("path: cannot resolve '" + requested + "': " + ec.message());
  // Inside root: the relative path from root must not climb out of it.
  const fs::path rel = resolved.lexically_relative(root);
  if (rel.empty() || *rel.begin() == ".." || rel.is_absolute()) {
    return InvalidArgument("path: '" + requested + "' is outside the models directory");
  }
  if (!fs::is_regular_file(resolved, ec)) {
    return NotFound("path: '" + requested + "' is not a file in the models directory");
  }
  return resolved.string();
}

}  // namespace hearth::server
