// The browser UI: GET / (chat), GET /dashboard (cache dashboard) and GET /ui/FILE (their
// CSS and JS), served from the embedded assets (web_assets.h). The pages are public;
// every API call they make carries the key the user typed (kept in sessionStorage).
#pragma once

#include <httplib.h>

#include <string>

#include "server/generation.h"

namespace hearth::server {

// True for the UI's own pages and files (GET or HEAD), which need no API key.
bool is_web_ui_request(const std::string& method, const std::string& path);

void register_web_routes(httplib::Server& http, ServerContext& ctx);

}  // namespace hearth::server
