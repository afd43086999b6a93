// The web UI's files (src/server/web/), compiled into the binary at build time by
// cmake/EmbedFiles.cmake: no file is read at run time and nothing comes from a CDN.
#pragma once

#include <span>
#include <string_view>

namespace hearth::server {

struct WebAsset {
  std::string_view name;  // relative to src/server/web/: "chat.html", "app.js"
  std::string_view body;
  std::string_view etag;  // quoted, from the file's SHA-256
};

std::span<const WebAsset> web_assets();

}  // namespace hearth::server
