#include "server/web_ui.h"

#include "server/http_util.h"
#include "server/web_assets.h"

namespace hearth::server {
namespace {

const WebAsset* find_asset(std::string_view name) {
  for (const WebAsset& a : web_assets()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::string content_type_for(std::string_view name) {
  auto ends_with = [&](std::string_view ext) {
    return name.size() >= ext.size() && name.substr(name.size() - ext.size()) == ext;
  };
  if (ends_with(".html")) return "text/html; charset=utf-8";
  if (ends_with(".css")) return "text/css; charset=utf-8";
  if (ends_with(".js")) return "text/javascript; charset=utf-8";
  if (ends_with(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

void reply_no_file(httplib::Response& res, std::string_view name) {
  ApiError e;
  e.http_status = 404;
  e.type = "not_found_error";
  e.code = "unknown_endpoint";
  e.message = "no UI file '" + std::string(name) + "'";
  reply_error(res, e);
}

// The page's asset, or a 404 in the API's error shape. Revalidated on every load
// (no-cache + ETag: a 304 costs one round trip, and an upgraded binary is never
// shadowed by a stale copy); nothing may be framed or loaded from elsewhere.
void serve_asset(std::string_view name, const httplib::Request& req, httplib::Response& res) {
  const WebAsset* asset = find_asset(name);
  if (asset == nullptr) return reply_no_file(res, name);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("ETag", std::string(asset->etag));
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                 "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
  if (req.get_header_value("If-None-Match") == asset->etag) {
    res.status = 304;
    return;
  }
  res.set_content(std::string(asset->body), content_type_for(asset->name));
}

}  // namespace

bool is_web_ui_request(const std::string& method, const std::string& path) {
  if (method != "GET" && method != "HEAD") return false;
  return path == "/" || path == "/dashboard" || path.rfind("/ui/", 0) == 0;
}

void register_web_routes(httplib::Server& http, ServerContext& ctx) {
  http.Get("/", with_metrics(ctx, "/ui", [](const auto& req, auto& res) {
             serve_asset("chat.html", req, res);
           }));
  http.Get("/dashboard", with_metrics(ctx, "/ui", [](const auto& req, auto& res) {
             serve_asset("dashboard.html", req, res);
           }));
  http.Get(R"(/ui/([A-Za-z0-9_.-]+))", with_metrics(ctx, "/ui", [](const auto& req, auto& res) {
             const std::string name = req.matches[1].str();
             // Only the pages' companions: the pages themselves live at / and /dashboard.
             if (name.ends_with(".html")) return reply_no_file(res, name);
             serve_asset(name, req, res);
           }));
}

}  // namespace hearth::server
