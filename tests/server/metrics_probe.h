// Reading /metrics from a test: one sample's value, and polling until a condition holds.
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace hearth::server::testing {

// The value of one exposed sample, `series` being the name plus labels exactly as
// /metrics prints them; -1 when absent.
inline double metric(const std::string& text, const std::string& series) {
  const std::string needle = series + " ";
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) {
    if (pos == 0 || text[pos - 1] == '\n') return std::atof(text.c_str() + pos + needle.size());
  }
  return -1;
}

inline std::string get_metrics(int port, const httplib::Headers& headers = {}) {
  httplib::Client c("127.0.0.1", port);
  auto r = c.Get("/metrics", headers);
  return r && r->status == 200 ? r->body : std::string();
}

// Polls /metrics until `done(text)` holds (bounded); returns the last text.
template <typename Pred>
std::string wait_metrics(int port, Pred done, int timeout_ms = 5000) {
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  do {
    text = get_metrics(port);
    if (done(text)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } while (std::chrono::steady_clock::now() < deadline);
  return text;
}

}  // namespace hearth::server::testing
