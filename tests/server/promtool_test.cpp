// GET /metrics of a real `hearth serve` (stories260K on the engine, a disk tier) after
// a cold request, a restore from a cache row and an evict, linted by Prometheus's own
// `promtool check metrics`: no output and exit 0 required (HELP and TYPE on every
// family, counters named _total, base units). Debian's prometheus package provides
// promtool (scripts/install-deps.sh); the test skips, saying so, only when it is absent.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "metrics_probe.h"
#include "serve_process.h"

namespace hearth::server::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kPromtool = "/usr/bin/promtool";

// Runs `promtool check metrics` on `text`; returns its exit status and output.
std::pair<int, std::string> promtool_check(const std::string& text, const fs::path& dir) {
  const fs::path in = dir / "metrics.txt";
  std::ofstream(in) << text;
  const std::string cmd = std::string(kPromtool) + " check metrics < " + in.string() + " 2>&1";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// hearth's own reading of the conventions, independent of promtool: every sample's
// family has HELP and TYPE, counters end in _total, no sub-second unit in a name.
std::vector<std::string> convention_errors(const std::string& text) {
  std::map<std::string, std::string> type;
  std::set<std::string> help;
  std::vector<std::string> errors;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      help.insert(line.substr(7, line.find(' ', 7) - 7));
    } else if (line.rfind("# TYPE ", 0) == 0) {
      const size_t sp = line.find(' ', 7);
      type[line.substr(7, sp - 7)] = line.substr(sp + 1);
    } else if (!line.empty() && line[0] != '#') {
      std::string name = line.substr(0, line.find_first_of("{ "));
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        const std::string s = suffix;
        const std::string base = name.size() > s.size() && name.ends_with(s)
                                     ? name.substr(0, name.size() - s.size())
                                     : "";
        if (!base.empty() && type.count(base) && type[base] == "histogram") name = base;
      }
      if (!type.count(name)) errors.push_back(name + ": no TYPE");
      if (!help.count(name)) errors.push_back(name + ": no HELP");
      if (type[name] == "counter" && !name.ends_with("_total"))
        errors.push_back(name + ": a counter not named _total");
      for (const char* unit : {"_ns", "_us", "_ms", "milliseconds", "nanoseconds"})
        if (name.find(unit) != std::string::npos) errors.push_back(name + ": unit " + unit);
    }
  }
  return errors;
}

json complete(httplib::Client& c, const std::string& prompt) {
  json body = {{"model", "stories"}, {"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}};
  auto r = c.Post("/v1/completions", body.dump(), "application/json");
  if (!r) return {{"transport_error", httplib::to_string(r.error())}};
  json j = json::parse(r->body, nullptr, false);
  j["http_status"] = r->status;
  return j;
}

TEST(Promtool, LiveMetricsPassPromtoolCheckMetrics) {
  const fs::path dir = fs::temp_directory_path() / ("hearth-promtool-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path model = fs::path(HEARTH_SHARED_DIR) / "models" / "stories260K.gguf";
  ASSERT_TRUE(fs::exists(model)) << model;
  // One sequence, so a prompt's second run restores its row from the cache (a second
  // sequence would still hold its cells); short prompts are saved.
  std::ofstream(dir / "serve.toml")
      << "[[models]]\nid = \"stories\"\npath = \"" << model.string()
      << "\"\ncontext = 512\nn_seq_max = 1\n"
      << "policy = { min_tokens = 8, cold_min_tokens = 8, boundary_trim_tokens = 0, "
         "boundary_align_tokens = 8, continued_interval = 64 }\n";
  ServeProcess proc;
  ASSERT_TRUE(proc.start(
      {"--config", (dir / "serve.toml").string(), "--cache-dir", (dir / "kvc").string()}))
      << proc.log();
  httplib::Client c("127.0.0.1", proc.port());
  c.set_read_timeout(30, 0);

  const std::string story = "Once upon a time there was a little girl named Lily who loved to";
  ASSERT_EQ(complete(c, story)["http_status"], 200);
  const auto saves_at_least = [&](int n) {
    return wait_metrics(proc.port(), [n](const std::string& t) {
      return metric(t, "hearth_cache_saves_total{reason=\"finish\"}") >= n;
    });
  };
  saves_at_least(1);
  // Another prompt takes the one sequence; the story's next run must come from its row.
  ASSERT_EQ(
      complete(c, "The big brown dog ran across the green field to find a red ball")["http_status"],
      200);
  saves_at_least(2);
  json warm = complete(c, story + " play in the park");
  ASSERT_EQ(warm["http_status"], 200) << warm.dump();
  EXPECT_GT(warm["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0) << warm.dump();

  std::string text = get_metrics(proc.port());
  EXPECT_GE(metric(text, "hearth_cache_restore_seconds_count{tier=\"disk\"}"), 1) << text;
  EXPECT_GE(metric(text, "hearth_request_prompt_starts_total{kind=\"partial\"}"), 1) << text;
  EXPECT_GE(metric(text, "hearth_time_to_first_token_seconds_count{model=\"stories\"}"), 3);
  EXPECT_GE(metric(text, "hearth_inter_token_latency_seconds_count{model=\"stories\"}"), 3);
  EXPECT_GE(metric(text, "hearth_queue_wait_seconds_count{model=\"stories\"}"), 3);
  const double disk_bytes = metric(text, "hearth_cache_tier_bytes{tier=\"disk\"}");
  EXPECT_GT(disk_bytes, 0) << text;

  // An evict lowers the tier's bytes: a level, so typed gauge (rate() of a counter that
  // goes down is wrong).
  auto evict =
      c.Post("/hearth/cache/evict", R"({"bytes": 1073741824, "tier": "disk"})", "application/json");
  ASSERT_TRUE(evict);
  ASSERT_EQ(evict->status, 200) << evict->body;
  text = get_metrics(proc.port());
  EXPECT_LT(metric(text, "hearth_cache_tier_bytes{tier=\"disk\"}"), disk_bytes) << text;
  EXPECT_GE(metric(text, "hearth_cache_evictions_total"), 1) << text;
  EXPECT_NE(text.find("# TYPE hearth_cache_tier_bytes gauge"), std::string::npos);

  const std::vector<std::string> errors = convention_errors(text);
  EXPECT_TRUE(errors.empty()) << ::testing::PrintToString(errors);
  EXPECT_EQ(proc.stop(), 0) << proc.log();

  if (!fs::exists(kPromtool)) {
    fs::remove_all(dir);
    GTEST_SKIP() << kPromtool
                 << " is missing: install Debian's prometheus package (scripts/install-deps.sh) "
                    "to lint /metrics with promtool";
  }
  const auto [status, output] = promtool_check(text, dir);
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output, "") << "promtool check metrics printed:\n" << output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace hearth::server::testing
