// Every route `hearth serve` registers except GET /health, and the bad credentials the
// auth tests present to each. Shared by the in-process (http_api_test.cpp) and the
// real-process (serve_acceptance_test.cpp) auth tests so both cover the same surface;
// a route added to src/server/*_routes.cpp belongs here too.
#pragma once

#include <httplib.h>

#include <string>
#include <vector>

namespace hearth::server::testing {

struct Route {
  std::string method;
  std::string path;
  std::string body;  // POST/DELETE body; ids name no loaded model, so a request that
                     // gets through auth changes nothing
};

inline std::vector<Route> protected_routes() {
  return {
      {"GET", "/v1/models", ""},
      {"GET", "/v1/models/no-such-model", ""},
      {"POST", "/v1/chat/completions", "{}"},
      {"POST", "/v1/completions", "{}"},
      {"POST", "/v1/embeddings", "{}"},
      {"POST", "/v1/messages", "{}"},
      {"POST", "/v1/messages/count_tokens", "{}"},
      {"POST", "/v1/responses", "{}"},
      {"GET", "/v1/responses/resp_none", ""},
      {"DELETE", "/v1/responses/resp_none", ""},
      {"GET", "/hearth/models", ""},
      {"POST", "/hearth/models", "{}"},
      {"DELETE", "/hearth/models", R"({"id":"no-such-model"})"},
      {"DELETE", "/hearth/models/no-such-model", ""},
      {"POST", "/hearth/tokenize", "{}"},
      {"POST", "/hearth/detokenize", "{}"},
      {"GET", "/hearth/cache/counters", ""},
      {"GET", "/hearth/cache/rows", ""},
      {"POST", "/hearth/cache/evict", "{}"},
      {"POST", "/hearth/cache/gc", "{}"},
      {"POST", "/hearth/prefill", "{}"},
      {"POST", "/hearth/verify", "{}"},
      {"POST", "/hearth/models/no-such-model/evict", ""},
      {"POST", "/hearth/models/no-such-model/shutdown", ""},
      {"GET", "/hearth/cache/pressure", ""},
      {"POST", "/hearth/cache/pressure", "{}"},
      {"POST", "/hearth/cache/pressure/check", ""},
      {"GET", "/metrics", ""},
      {"GET", "/no/such/endpoint", ""},  // unknown paths must not reveal a 404 either
  };
}

// Missing key, wrong key (both header forms), right key with the wrong scheme.
inline std::vector<httplib::Headers> bad_credentials(const std::string& right_key) {
  return {httplib::Headers{}, httplib::Headers{{"Authorization", "Bearer wrong-" + right_key}},
          httplib::Headers{{"x-api-key", "wrong-" + right_key}},
          httplib::Headers{{"Authorization", "Basic " + right_key}}};
}

inline httplib::Result send(httplib::Client& c, const Route& r, const httplib::Headers& h) {
  if (r.method == "GET") return c.Get(r.path.c_str(), h);
  if (r.method == "DELETE") return c.Delete(r.path.c_str(), h, r.body, "application/json");
  return c.Post(r.path.c_str(), h, r.body, "application/json");
}

}  // namespace hearth::server::testing
