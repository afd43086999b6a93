#include "server/metrics.h"

#include <cmath>
#include <cstdio>

#include "server/cache_metrics.h"

namespace hearth::server {
namespace {

// Bucket bounds in seconds. A cache hit answers in about a millisecond and a cold
// prompt on a large model in tens of seconds, so the latency sets span 1 ms .. 2 min.
const std::vector<double>& latency_buckets() {
  static const std::vector<double> b = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                        0.5,   1,      2.5,   5,    10,    30,   60,  120};
  return b;
}
// One decode step: sub-millisecond on a toy model, ~100 ms on a 7B one on two cores.
const std::vector<double>& inter_token_buckets() {
  static const std::vector<double> b = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                        0.075,  0.1,   0.25,   0.5,   1,    2.5};
  return b;
}
// Restoring a row: a memcpy from RAM (tens of microseconds) up to a large disk read.
const std::vector<double>& restore_buckets() {
  static const std::vector<double> b = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                        0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5};
  return b;
}

std::string model_label(const std::string& model) {
  return "model=\"" + escape_label_value(model) + "\"";
}

}  // namespace

std::string format_metric_value(double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {  // counts: every digit
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.9g", v);
  }
  return buf;
}

std::string escape_label_value(const std::string& v) {
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

void metric_family(std::string& out, const std::string& name, const char* type,
                   const std::string& help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

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
    const std::string le = i < bounds_.size() ? format_metric_value(bounds_[i]) : "+Inf";
    out += name + "_bucket{" + labels + sep + "le=\"" + le + "\"} " + std::to_string(cumulative) +
           "\n";
  }
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += name + "_sum" + braces + " " + format_metric_value(sum_) + "\n";
  out += name + "_count" + braces + " " + std::to_string(count_) + "\n";
}

Metrics::ModelSeries::ModelSeries()
    : ttft(latency_buckets()),
      inter_token(inter_token_buckets()),
      queue_wait(latency_buckets()),
      tokens_per_second({1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000}) {}

Metrics::Metrics() : cancel_free_steps_({0, 1, 2, 4, 8, 16, 64}) {}

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

void Metrics::record_generation(const GenerationSample& g) {
  std::lock_guard<std::mutex> lock(mu_);
  ModelSeries& m = models_[g.model];
  if (g.ttft_seconds >= 0) m.ttft.observe(g.ttft_seconds);
  if (g.queue_seconds >= 0) m.queue_wait.observe(g.queue_seconds);
  for (double s : g.inter_token_seconds) m.inter_token.observe(s);
  m.prompt_tokens += static_cast<uint64_t>(g.prompt_tokens);
  m.cached_tokens += static_cast<uint64_t>(g.cached_tokens);
  m.completion_tokens += static_cast<uint64_t>(g.completion_tokens);
  m.draft_tokens += static_cast<uint64_t>(g.draft_tokens);
  m.draft_accepted += static_cast<uint64_t>(g.draft_accepted);
  if (g.decode_seconds > 0 && g.completion_tokens > 0) {
    m.decode_seconds += g.decode_seconds;
    m.last_tokens_per_second = static_cast<double>(g.completion_tokens) / g.decode_seconds;
    m.tokens_per_second.observe(m.last_tokens_per_second);
    last_tokens_per_second_ = m.last_tokens_per_second;
  }
  if (g.restore_seconds >= 0 && !g.restore_tier.empty()) {
    auto it = restore_.find(g.restore_tier);
    if (it == restore_.end())
      it = restore_.emplace(g.restore_tier, Histogram(restore_buckets())).first;
    it->second.observe(g.restore_seconds);
  }
}

GenerationTotals Metrics::totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  GenerationTotals t;
  t.cancelled = cancelled_;
  t.last_tokens_per_second = last_tokens_per_second_;
  for (const auto& [model, m] : models_) {
    t.prompt_tokens += m.prompt_tokens;
    t.cached_tokens += m.cached_tokens;
    t.completion_tokens += m.completion_tokens;
    t.ttft_count += m.ttft.count();
    t.ttft_seconds_sum += m.ttft.sum();
    t.models[model] = {m.completion_tokens, m.decode_seconds, m.last_tokens_per_second};
  }
  return t;
}

void Metrics::render_locked(std::string& out) const {
  metric_family(out, "hearth_http_requests_total", "counter",
                "HTTP requests answered, by endpoint and status code.");
  for (const auto& [key, n] : requests_) {
    out += "hearth_http_requests_total{endpoint=\"" + escape_label_value(key.first) +
           "\",status=\"" + std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  }
  metric_family(out, "hearth_http_request_duration_seconds", "histogram",
                "Time from a request's arrival to its reply's end, by endpoint.");
  for (const auto& [endpoint, h] : latency_) {
    h.render("hearth_http_request_duration_seconds",
             "endpoint=\"" + escape_label_value(endpoint) + "\"", out);
  }

  // Per-model generation series: one family each, a series per model that generated.
  struct Family {
    const char* name;
    const char* help;
    const Histogram ModelSeries::*h;
  };
  for (const Family& f : {
           Family{"hearth_time_to_first_token_seconds",
                  "Time from a generation request's arrival to its first generated token.",
                  &ModelSeries::ttft},
           Family{"hearth_inter_token_latency_seconds",
                  "Time between consecutive generated tokens as the client receives them.",
                  &ModelSeries::inter_token},
           Family{"hearth_queue_wait_seconds",
                  "Time a generation waited in its model's queue for a free sequence.",
                  &ModelSeries::queue_wait},
           Family{"hearth_generation_tokens_per_second",
                  "Decode throughput of each generation (generated tokens per second after the "
                  "first).",
                  &ModelSeries::tokens_per_second},
       }) {
    metric_family(out, f.name, "histogram", f.help);
    for (const auto& [model, m] : models_) (m.*f.h).render(f.name, model_label(model), out);
  }
  metric_family(out, "hearth_last_tokens_per_second", "gauge",
                "Decode throughput of the model's latest generation.");
  for (const auto& [model, m] : models_) {
    out += "hearth_last_tokens_per_second{" + model_label(model) + "} " +
           format_metric_value(m.last_tokens_per_second) + "\n";
  }
  struct Tokens {
    const char* name;
    const char* help;
    uint64_t ModelSeries::*n;
  };
  for (const Tokens& t : {
           Tokens{"hearth_prompt_tokens_total", "Prompt tokens of finished generations.",
                  &ModelSeries::prompt_tokens},
           Tokens{"hearth_cached_prompt_tokens_total",
                  "Prompt tokens restored from the KV cache instead of computed.",
                  &ModelSeries::cached_tokens},
           Tokens{"hearth_completion_tokens_total", "Tokens generated.",
                  &ModelSeries::completion_tokens},
           Tokens{"hearth_draft_tokens_total",
                  "Speculative decoding: tokens drafted (draft model or prompt lookup) and "
                  "verified by the target.",
                  &ModelSeries::draft_tokens},
           Tokens{"hearth_draft_accepted_tokens_total",
                  "Speculative decoding: drafted tokens the target agreed with (each saved a "
                  "forward pass).",
                  &ModelSeries::draft_accepted},
       }) {
    metric_family(out, t.name, "counter", t.help);
    for (const auto& [model, m] : models_)
      out += std::string(t.name) + "{" + model_label(model) + "} " + std::to_string(m.*t.n) + "\n";
  }
  metric_family(out, "hearth_decode_seconds_total", "counter",
                "Time from first generated token to last, summed over generations (the rate of "
                "hearth_completion_tokens_total over the rate of this is the model's tokens/s).");
  for (const auto& [model, m] : models_) {
    out += "hearth_decode_seconds_total{" + model_label(model) + "} " +
           format_metric_value(m.decode_seconds) + "\n";
  }
  metric_family(out, "hearth_cache_restore_seconds", "histogram",
                "Time to restore a prompt from a cache row (checkout, verify, copy into the KV), "
                "by the row's tier.");
  for (const auto& [tier, h] : restore_)
    h.render("hearth_cache_restore_seconds", "tier=\"" + escape_label_value(tier) + "\"", out);

  metric_family(out, "hearth_cancelled_generations_total", "counter",
                "Generations cancelled (client gone, shutdown deadline).");
  out += "hearth_cancelled_generations_total " + std::to_string(cancelled_) + "\n";
  metric_family(out, "hearth_cancel_free_steps", "histogram",
                "Scheduler steps between a cancel and its sequence being freed.");
  cancel_free_steps_.render("hearth_cancel_free_steps", "", out);
}

std::string Metrics::render(ServiceApi& service) const {
  std::string out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    render_locked(out);
  }
  metric_family(out, "hearth_requests_in_flight", "gauge", "Generations running now.");
  out += "hearth_requests_in_flight " + std::to_string(in_flight.load()) + "\n";
  metric_family(out, "hearth_queue_depth", "gauge",
                "Requests waiting for a generation sequence, all models.");
  out += "hearth_queue_depth " + std::to_string(service.queue_depth()) + "\n";
  metric_family(out, "hearth_requests_rejected_busy_total", "counter",
                "Generation requests refused with 429 because their model's queue was full.");
  out += "hearth_requests_rejected_busy_total " + std::to_string(rejected_busy.load()) + "\n";
  metric_family(out, "hearth_client_disconnects_total", "counter",
                "Generations whose client went away before the end.");
  out += "hearth_client_disconnects_total " + std::to_string(client_disconnects.load()) + "\n";

  // Per-model scheduler state.
  const auto models = service.list_models();
  const auto per_model = [&](const char* name, const char* type, const char* help, auto value_of) {
    metric_family(out, name, type, help);
    for (const auto& m : models) {
      out +=
          std::string(name) + "{" + model_label(m.id) + "} " + std::to_string(value_of(m)) + "\n";
    }
  };
  per_model("hearth_model_active_sequences", "gauge", "Requests holding a sequence, per model.",
            [](const ModelDescription& m) { return m.active_requests; });
  per_model("hearth_model_queued_requests", "gauge", "Requests waiting for a sequence, per model.",
            [](const ModelDescription& m) { return m.queued_requests; });
  per_model("hearth_model_scheduler_steps_total", "counter", "Forward passes run, per model.",
            [](const ModelDescription& m) { return m.scheduler_steps; });

  render_cache_counters(service.cache_counters(), out);
  const auto tiers = service.tier_usage();
  struct TierFamily {
    const char* name;
    const char* help;
    int64_t TierUsage::*v;
  };
  for (const TierFamily& f : {
           TierFamily{"hearth_cache_tier_bytes", "Bytes of cache rows held, per tier.",
                      &TierUsage::bytes},
           TierFamily{"hearth_cache_tier_rows", "Cache rows held, per tier.", &TierUsage::rows},
           TierFamily{"hearth_cache_tier_quota_bytes", "Byte quota of each tier.",
                      &TierUsage::quota_bytes},
       }) {
    metric_family(out, f.name, "gauge", f.help);
    for (const auto& t : tiers) {
      out += std::string(f.name) + "{tier=\"" + escape_label_value(t.tier) + "\"} " +
             std::to_string(t.*f.v) + "\n";
    }
  }
  return out;
}

}  // namespace hearth::server
