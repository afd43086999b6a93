#include "engine/model/reference_check.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hearth/engine/sampler.h"
#include "hearth/engine/tokenizer.h"

namespace hearth::engine {
namespace {

Status bad(const std::string& path, int line, const std::string& what) {
  return DataLoss(path + ":" + std::to_string(line) + ": " + what);
}

}  // namespace

Result<ReferenceCase> parse_reference_case(const std::string& path) {
  std::ifstream in(path);
  if (!in) return IoError("cannot open reference case " + path);
  ReferenceCase c;
  c.path = path;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    if (key == "model") {
      std::string k;
      int add_bos = 1;
      ls >> c.model_file >> k >> c.arch >> k >> c.n_vocab >> k >> add_bos;
      c.add_bos = add_bos != 0;
    } else if (key == "prompt_text") {
      try {
        c.prompt_text = nlohmann::json::parse(line.substr(12)).get<std::string>();
      } catch (const std::exception& e) {
        return bad(path, n, std::string("bad prompt_text: ") + e.what());
      }
    } else if (key == "prompt_tokens") {
      size_t count = 0;
      ls >> count;
      c.prompt_tokens.resize(count);
      for (auto& t : c.prompt_tokens) ls >> t;
      if (!ls) return bad(path, n, "bad prompt_tokens");
    } else if (key == "step") {
      ReferenceStep s;
      std::string k;
      int idx = 0;
      ls >> idx >> k >> s.token >> k;
      for (auto& [id, logit] : s.top5) {
        std::string pair;
        ls >> pair;
        const size_t colon = pair.find(':');
        if (colon == std::string::npos) return bad(path, n, "bad top5 pair '" + pair + "'");
        id = std::stoi(pair.substr(0, colon));
        logit = std::stof(pair.substr(colon + 1));
      }
      if (!ls || idx != static_cast<int>(c.steps.size())) return bad(path, n, "bad step line");
      c.steps.push_back(s);
    } else if (key == "batch_variance") {
      std::string k;
      ls >> k >> c.batch_variance;
    } else if (key == "text_hex") {
      ls >> c.text_hex;
    }
  }
  if (c.model_file.empty() || c.prompt_tokens.empty() || c.steps.empty()) {
    return DataLoss(path + ": missing model, prompt_tokens or step lines");
  }
  return c;
}

std::string resolve_reference_model(const ReferenceCase& c) {
  const std::filesystem::path dir = std::filesystem::path(c.path).parent_path();
  for (const auto& p : {dir / "models" / c.model_file, dir / ".." / "models" / c.model_file}) {
    std::error_code ec;
    if (std::filesystem::exists(p, ec)) return p.lexically_normal().string();
  }
  return "";
}

ReferenceBounds reference_bounds(const ModelInfo& info) {
  const std::string& q = info.quant_name;
  const bool float_weights = q == "F32" || q == "F16" || q == "BF16";
  if (float_weights && info.kv_type == KvType::kF16) return {0.1, 0.01};
  return {0.25, 0.06};
}

namespace {

double step_max_diff(const std::vector<float>& logits, const ReferenceStep& ref) {
  double m = 0;
  for (const auto& [id, logit] : ref.top5) {
    m = std::max(m, std::fabs(static_cast<double>(logits[static_cast<size_t>(id)]) - logit));
  }
  return m;
}

// The MoE near-tie re-run (see run_reference_case): replaces `logits` (and the last
// position's KV) by the closest runner-up routing when that is within `bound`.
// Returns whether it did.
Result<bool> try_runner_up(Engine& engine, const BatchToken& last, const ReferenceStep& ref,
                           double bound, std::vector<float>& logits) {
  std::vector<std::pair<float, int32_t>> ties;  // (margin, layer), closest first
  const std::span<const float> margins = engine.router_margins();
  for (size_t l = 0; l < margins.size(); ++l) {
    if (margins[l] < kRouterTieMargin) ties.push_back({margins[l], static_cast<int32_t>(l)});
  }
  if (ties.empty()) return false;
  std::sort(ties.begin(), ties.end());
  const BatchToken one[1] = {{last.token, last.pos, last.seq, true}};
  std::vector<float> alt;
  double best = step_max_diff(logits, ref);
  int32_t best_layer = -1;
  for (const auto& [margin, layer] : ties) {
    HEARTH_RETURN_IF_ERROR(engine.seq_truncate(last.seq, last.pos));
    engine.route_runner_up(layer);
    HEARTH_RETURN_IF_ERROR(engine.forward(one, alt));
    const double d = step_max_diff(alt, ref);
    if (d < best) {
      best = d;
      best_layer = layer;
    }
  }
  const bool take = best_layer >= 0 && best <= bound;
  // Leave the KV (and logits) of the routing kept: the runner-up's or the router's own.
  HEARTH_RETURN_IF_ERROR(engine.seq_truncate(last.seq, last.pos));
  if (take) engine.route_runner_up(best_layer);
  HEARTH_RETURN_IF_ERROR(engine.forward(one, alt));
  if (take) logits = alt;
  return take;
}

}  // namespace

Result<ReferenceReport> run_reference_case(Engine& engine, const ReferenceCase& c, bool keep_rows) {
  const int32_t n_vocab = engine.info().n_vocab;
  if (c.n_vocab != n_vocab) {
    return InvalidArgument(c.path + ": case n_vocab " + std::to_string(c.n_vocab) +
                           " differs from the model's " + std::to_string(n_vocab));
  }
  ReferenceReport r;
  r.bounds = reference_bounds(engine.info());
  auto ids = engine.tokenizer().encode(c.prompt_text, /*add_special=*/true,
                                       /*parse_special=*/false);
  r.prompt_tokens_match = ids.ok() && *ids == c.prompt_tokens;
  HEARTH_RETURN_IF_ERROR(engine.seq_clear(0));
  std::vector<BatchToken> batch;
  for (size_t i = 0; i < c.prompt_tokens.size(); ++i) {
    batch.push_back(
        {c.prompt_tokens[i], static_cast<int32_t>(i), 0, i + 1 == c.prompt_tokens.size()});
  }
  std::vector<float> logits;
  double sum = 0;
  size_t count = 0;
  int32_t pos = static_cast<int32_t>(c.prompt_tokens.size());
  for (size_t step = 0; step < c.steps.size(); ++step) {
    if (step > 0) {
      batch.assign(1, BatchToken{c.steps[step - 1].token, pos++, 0, true});
    }
    HEARTH_RETURN_IF_ERROR(engine.forward(batch, logits));
    const ReferenceStep& ref = c.steps[step];
    if (engine.info().n_expert > 0 && step_max_diff(logits, ref) > r.bounds.max_abs) {
      HEARTH_ASSIGN_OR_RETURN(bool rerouted,
                              try_runner_up(engine, batch.back(), ref, r.bounds.max_abs, logits));
      r.rerouted_steps += rerouted ? 1 : 0;
    }
    const int32_t ours = Sampler::greedy(logits);
    r.argmax.push_back(ours);
    if (keep_rows) r.rows.insert(r.rows.end(), logits.begin(), logits.end());
    std::array<float, 5> mine{};
    for (size_t k = 0; k < 5; ++k) {
      const auto [id, ref_logit] = ref.top5[k];
      if (id < 0 || id >= n_vocab) return DataLoss(c.path + ": token id out of range");
      mine[k] = logits[static_cast<size_t>(id)];
      const double d = std::fabs(static_cast<double>(mine[k]) - ref_logit);
      r.max_abs_diff = std::max(r.max_abs_diff, d);
      sum += d;
      ++count;
    }
    r.logits.push_back(mine);
    if (ours != ref.token) {
      r.argmax_matches = false;
      const double margin = ref.top5[0].second - ref.top5[1].second;
      if (margin > r.bounds.max_abs) ++r.top1_violations;
    }
  }
  r.mean_abs_diff = count ? sum / count : 0;
  r.pass = r.max_abs_diff <= r.bounds.max_abs && r.mean_abs_diff <= r.bounds.mean_abs &&
           r.top1_violations == 0 && r.prompt_tokens_match;
  return r;
}

}  // namespace hearth::engine
