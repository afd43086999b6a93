// Server-side measurements exported at GET /metrics in the Prometheus text format
// (docs/metrics.md lists every metric): request counts by endpoint and status, latency
// histograms (request, time to first token, inter-token, queue wait, cache restore per
// tier), tokens per model, in-flight and queued requests. Cache counters and tier usage
// come from the service at scrape time. Conventions: HELP and TYPE on every family,
// counters end in _total, levels are gauges, times are in seconds and sizes in bytes.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "server/service_api.h"

namespace hearth::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // Appends the _bucket/_sum/_count lines for `name` with extra labels (may be empty).
  void render(const std::string& name, const std::string& labels, std::string& out) const;
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // one per bound, plus +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// One model's decode throughput since the server started.
struct ModelThroughput {
  uint64_t completion_tokens = 0;
  double decode_seconds = 0;  // first token to last, summed over requests
  double last_tokens_per_second = 0;
};

// The generation numbers /metrics renders, read at once (for GET /hearth/stats).
struct GenerationTotals {
  uint64_t prompt_tokens = 0;
  uint64_t cached_tokens = 0;
  uint64_t completion_tokens = 0;
  uint64_t cancelled = 0;
  uint64_t ttft_count = 0;  // generations that produced a first token (the TTFT histogram)
  double ttft_seconds_sum = 0;
  double last_tokens_per_second = 0;
  std::map<std::string, ModelThroughput> models;
};

// What one finished generation adds to the metrics; times in seconds, < 0 = not measured.
struct GenerationSample {
  std::string model;
  double ttft_seconds = -1;
  double queue_seconds = -1;
  double restore_seconds = -1;
  std::string restore_tier;  // "ram", "ram_file" or "disk" when restore_seconds >= 0
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t completion_tokens = 0;
  double decode_seconds = 0;  // first token to the end
  std::vector<double> inter_token_seconds;
  int64_t draft_tokens = 0;  // speculative decoding: drafted, and accepted by the target
  int64_t draft_accepted = 0;
};

class Metrics {
 public:
  Metrics();

  void record_request(const std::string& endpoint, int status, double seconds);
  void record_generation(const GenerationSample& sample);
  // A generation cancelled by the client or a stop string; steps_after_cancel < 0 = unknown.
  void record_cancel(int64_t steps_after_cancel);

  std::atomic<int64_t> in_flight{0};
  std::atomic<int64_t> rejected_busy{0};
  std::atomic<int64_t> client_disconnects{0};

  // The full exposition text, including what the service reports.
  std::string render(ServiceApi& service) const;
  GenerationTotals totals() const;

 private:
  struct ModelSeries {
    ModelSeries();
    Histogram ttft, inter_token, queue_wait, tokens_per_second;
    uint64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
    uint64_t draft_tokens = 0, draft_accepted = 0;
    double decode_seconds = 0;  // first token to last, summed over generations
    double last_tokens_per_second = 0;
  };
  void render_locked(std::string& out) const;

  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, Histogram> latency_;   // by endpoint
  std::map<std::string, ModelSeries> models_;  // by model id
  std::map<std::string, Histogram> restore_;   // by tier
  Histogram cancel_free_steps_;  // scheduler steps from a cancel to the sequence freed
  uint64_t cancelled_ = 0;
  double last_tokens_per_second_ = 0;  // the latest generation's, any model
};

// "# HELP name help\n# TYPE name type\n", the head of every metric family.
void metric_family(std::string& out, const std::string& name, const char* type,
                   const std::string& help);
std::string escape_label_value(const std::string& value);
std::string format_metric_value(double value);

}  // namespace hearth::server
