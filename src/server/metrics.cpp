#include "server/metrics.h"

#include <cstdio>

namespace hearth::server {
namespace {

const std::vector<double>& latency_buckets() {
  static const std::vector<double> b = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                        1,     2.5,  5,     10,   30,  60,   120};
  return b;
}

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

// Prometheus metric names allow [a-zA-Z0-9_:]; counter names from the cache are
// mapped onto that alphabet.
std::string sanitize(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += ok ? c : '_';
  }
  return out;
}

std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(const std::string& name, const std::string& labels, std::string& out) const {
  const std::string sep = labels.empty() ? "" : ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? fmt(bounds_[i]) : "+Inf";
    out += name + "_bucket{" + labels + sep + "le=\"" + le + "\"} " + std::to_string(cumulative) +
           "\n";
  }
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += name + "_sum" + braces + " " + fmt(sum_) + "\n";
  out += name + "_count" + braces + " " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : ttft_(latency_buckets()),
      tokens_per_second_({1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500}),
      cancel_free_steps_({0, 1, 2, 4, 8, 16, 64}) {}

void Metrics::record_cancel(int64_t steps_after_cancel) {
  std::lock_guard<std::mutex> lock(mu_);
  ++cancelled_;
  if (steps_after_cancel >= 0) cancel_free_steps_.observe(static_cast<double>(steps_after_cancel));
}

void Metrics::record_request(const std::string& endpoint, int status, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, status}];
  auto it = latency_.find(endpoint);
  if (it == latency_.end()) it = latency_.emplace(endpoint, Histogram(latency_buckets())).first;
  it->second.observe(seconds);
}

void Metrics::record_generation(const std::string& model, double ttft_seconds,
                                int64_t prompt_tokens, int64_t cached_tokens,
                                int64_t completion_tokens, double generation_seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ttft_seconds >= 0) ttft_.observe(ttft_seconds);
  prompt_tokens_ += static_cast<uint64_t>(prompt_tokens);
  cached_tokens_ += static_cast<uint64_t>(cached_tokens);
  completion_tokens_ += static_cast<uint64_t>(completion_tokens);
  ModelThroughput& m = models_[model];
  m.completion_tokens += static_cast<uint64_t>(completion_tokens);
  if (generation_seconds > 0 && completion_tokens > 0) {
    last_tokens_per_second_ = static_cast<double>(completion_tokens) / generation_seconds;
    tokens_per_second_.observe(last_tokens_per_second_);
    m.decode_seconds += generation_seconds;
    m.last_tokens_per_second = last_tokens_per_second_;
  }
}

GenerationTotals Metrics::totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  GenerationTotals t;
  t.prompt_tokens = prompt_tokens_;
  t.cached_tokens = cached_tokens_;
  t.completion_tokens = completion_tokens_;
  t.cancelled = cancelled_;
  t.ttft_count = ttft_.count();
  t.ttft_seconds_sum = ttft_.sum();
  t.last_tokens_per_second = last_tokens_per_second_;
  t.models = models_;
  return t;
}

std::string Metrics::render(ServiceApi& service) const {
  std::string out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out += "# HELP hearth_http_requests_total HTTP requests by endpoint and status.\n";
    out += "# TYPE hearth_http_requests_total counter\n";
    for (const auto& [key, n] : requests_) {
      out += "hearth_http_requests_total{endpoint=\"" + escape_label(key.first) + "\",status=\"" +
             std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
    }
    out += "# HELP hearth_http_request_duration_seconds Request latency by endpoint.\n";
    out += "# TYPE hearth_http_request_duration_seconds histogram\n";
    for (const auto& [endpoint, h] : latency_) {
      h.render("hearth_http_request_duration_seconds",
               "endpoint=\"" + escape_label(endpoint) + "\"", out);
    }
    out +=
        "# HELP hearth_time_to_first_token_seconds Time from request to first generated token.\n";
    out += "# TYPE hearth_time_to_first_token_seconds histogram\n";
    ttft_.render("hearth_time_to_first_token_seconds", "", out);
    out += "# HELP hearth_generation_tokens_per_second Decode throughput per request.\n";
    out += "# TYPE hearth_generation_tokens_per_second histogram\n";
    tokens_per_second_.render("hearth_generation_tokens_per_second", "", out);
    out += "# HELP hearth_last_tokens_per_second Decode throughput of the latest request.\n";
    out += "# TYPE hearth_last_tokens_per_second gauge\n";
    out += "hearth_last_tokens_per_second " + fmt(last_tokens_per_second_) + "\n";
    out += "# TYPE hearth_prompt_tokens_total counter\n";
    out += "hearth_prompt_tokens_total " + std::to_string(prompt_tokens_) + "\n";
    out += "# TYPE hearth_cached_prompt_tokens_total counter\n";
    out += "hearth_cached_prompt_tokens_total " + std::to_string(cached_tokens_) + "\n";
    out += "# TYPE hearth_completion_tokens_total counter\n";
    out += "hearth_completion_tokens_total " + std::to_string(completion_tokens_) + "\n";
    out +=
        "# HELP hearth_cancelled_generations_total Generations cancelled (client gone, stop "
        "string, shutdown).\n";
    out += "# TYPE hearth_cancelled_generations_total counter\n";
    out += "hearth_cancelled_generations_total " + std::to_string(cancelled_) + "\n";
    out +=
        "# HELP hearth_cancel_free_steps Scheduler steps between a cancel and its sequence "
        "being freed.\n";
    out += "# TYPE hearth_cancel_free_steps histogram\n";
    cancel_free_steps_.render("hearth_cancel_free_steps", "", out);
    out += "# HELP hearth_model_completion_tokens_total Tokens generated, per model.\n";
    out += "# TYPE hearth_model_completion_tokens_total counter\n";
    for (const auto& [model, m] : models_) {
      out += "hearth_model_completion_tokens_total{model=\"" + escape_label(model) + "\"} " +
             std::to_string(m.completion_tokens) + "\n";
    }
    out +=
        "# HELP hearth_model_decode_seconds_total Time from first to last token, summed, per "
        "model (tokens/s = rate of tokens over rate of this).\n";
    out += "# TYPE hearth_model_decode_seconds_total counter\n";
    for (const auto& [model, m] : models_) {
      out += "hearth_model_decode_seconds_total{model=\"" + escape_label(model) + "\"} " +
             fmt(m.decode_seconds) + "\n";
    }
  }
  out += "# HELP hearth_requests_in_flight Generations running now.\n";
  out += "# TYPE hearth_requests_in_flight gauge\n";
  out += "hearth_requests_in_flight " + std::to_string(in_flight.load()) + "\n";
  out += "# HELP hearth_queue_depth Requests waiting for a generation slot.\n";
  out += "# TYPE hearth_queue_depth gauge\n";
  out += "hearth_queue_depth " + std::to_string(service.queue_depth()) + "\n";
  out += "# TYPE hearth_requests_rejected_busy_total counter\n";
  out += "hearth_requests_rejected_busy_total " + std::to_string(rejected_busy.load()) + "\n";
  out += "# TYPE hearth_client_disconnects_total counter\n";
  out += "hearth_client_disconnects_total " + std::to_string(client_disconnects.load()) + "\n";

  // Per-model scheduler state, when the service reports it.
  const auto models = service.list_models();
  const auto per_model = [&](const char* name, const char* type, const char* help, auto value_of) {
    out += std::string("# HELP ") + name + " " + help + "\n";
    out += std::string("# TYPE ") + name + " " + type + "\n";
    for (const auto& m : models) {
      out += std::string(name) + "{model=\"" + escape_label(m.id) + "\"} " +
             std::to_string(value_of(m)) + "\n";
    }
  };
  per_model("hearth_model_active_sequences", "gauge", "Requests holding a sequence, per model.",
            [](const ModelDescription& m) { return m.active_requests; });
  per_model("hearth_model_queued_requests", "gauge", "Requests waiting for a sequence, per model.",
            [](const ModelDescription& m) { return m.queued_requests; });
  per_model("hearth_model_scheduler_steps_total", "counter", "Forward passes run, per model.",
            [](const ModelDescription& m) { return m.scheduler_steps; });

  // KV cache operational counters (monotonic since start), one metric each.
  for (const auto& [name, value] : service.cache_counters()) {
    const std::string metric = "hearth_cache_" + sanitize(name);
    out += "# TYPE " + metric + " counter\n";
    out += metric + " " + std::to_string(value) + "\n";
  }
  out += "# HELP hearth_cache_tier_bytes Bytes held per cache tier.\n";
  out += "# TYPE hearth_cache_tier_bytes gauge\n";
  const auto tiers = service.tier_usage();
  for (const auto& t : tiers) {
    out += "hearth_cache_tier_bytes{tier=\"" + escape_label(t.tier) + "\"} " +
           std::to_string(t.bytes) + "\n";
  }
  out += "# TYPE hearth_cache_tier_rows gauge\n";
  for (const auto& t : tiers) {
    out += "hearth_cache_tier_rows{tier=\"" + escape_label(t.tier) + "\"} " +
           std::to_string(t.rows) + "\n";
  }
  out += "# TYPE hearth_cache_tier_quota_bytes gauge\n";
  for (const auto& t : tiers) {
    out += "hearth_cache_tier_quota_bytes{tier=\"" + escape_label(t.tier) + "\"} " +
           std::to_string(t.quota_bytes) + "\n";
  }
  return out;
}

}  // namespace hearth::server
