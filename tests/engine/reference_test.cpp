// Agreement with llama.cpp: every case in <shared>/reference/*.txt and
// <shared>/reference/architectures/*.txt (globbed, so new cases need no code change) is run
// teacher-forced and must stay within the bounds of docs/engine.md (float weights: max 0.1 / mean
// 0.01; quantized: 0.25 / 0.06; no top-1 miss where llama.cpp's top-1/top-2 margin exceeds the max
// bound).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>

#include "engine/model/reference_check.h"
#include "hearth/engine/engine.h"

namespace hearth::engine {
namespace {

namespace fs = std::filesystem;

// The base set (reference/*.txt) and the architecture set (reference/architectures/).
std::vector<std::string> reference_cases() {
  std::vector<std::string> out;
  const fs::path root = fs::path(HEARTH_SHARED_DIR) / "reference";
  for (const fs::path& dir : {root, root / "architectures"}) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".txt") out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Engines are shared by the three cases of a model.
Engine* engine_for(const std::string& model, Status& error, KvType kv_type = KvType::kF16) {
  static std::map<std::string, std::unique_ptr<Engine>> engines;
  auto& engine = engines[model + ";" + kv_type_name(kv_type)];
  if (!engine) {
    EngineOptions opts;
    opts.kv_type = kv_type;
    opts.n_seq_max = 1;
    // The model's own (llama.cpp ran with min(4096, it); the context length changes no
    // bits), within the default KV budget.
    opts.n_ctx = 0;
    opts.n_threads = 1;  // the test machine is shared; bits do not depend on it
    auto e = Engine::load(model, opts);
    if (!e.ok()) {
      error = e.status();
      return nullptr;
    }
    engine = std::move(e).value();
  }
  return engine.get();
}

class ReferenceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceTest, AgreesWithLlamaCpp) {
  const std::string path = GetParam();
  if (path.empty()) GTEST_SKIP() << "SKIPPED: no reference cases under " HEARTH_SHARED_DIR;
  auto c = parse_reference_case(path);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const std::string model = resolve_reference_model(*c);
  if (model.empty()) GTEST_SKIP() << "SKIPPED: model " << c->model_file << " not found";
  Status error;
  Engine* engine = engine_for(model, error);
  ASSERT_NE(engine, nullptr) << error.to_string();
  auto r = run_reference_case(*engine, *c);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::printf(
      "reference %-36s max_abs_diff %.6f mean_abs_diff %.6f top1_violations %d "
      "tokens_match %d argmax_matches %d%s\n",
      fs::path(path).filename().c_str(), r->max_abs_diff, r->mean_abs_diff, r->top1_violations,
      r->prompt_tokens_match ? 1 : 0, r->argmax_matches ? 1 : 0,
      r->rerouted_steps > 0 ? (" rerouted_steps " + std::to_string(r->rerouted_steps)).c_str()
                            : "");
  if (std::getenv("HEARTH_REFERENCE_STEPS") != nullptr) {  // per-step detail, for debugging
    for (size_t i = 0; i < r->logits.size(); ++i) {
      std::printf("  step %2zu ours %d ref %d |", i, r->argmax[i], c->steps[i].token);
      for (size_t k = 0; k < 5; ++k)
        std::printf(" %+.4f", r->logits[i][k] - c->steps[i].top5[k].second);
      std::printf("\n");
    }
  }
  EXPECT_LE(r->max_abs_diff, r->bounds.max_abs);
  EXPECT_LE(r->mean_abs_diff, r->bounds.mean_abs);
  EXPECT_EQ(r->top1_violations, 0);
  EXPECT_TRUE(r->prompt_tokens_match) << "tokenizing prompt_text does not give prompt_tokens";
}

std::vector<std::string> cases_or_placeholder() {
  auto v = reference_cases();
  if (v.empty()) v.push_back("");
  return v;
}

std::string case_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param.empty() ? "none" : fs::path(info.param).stem().string();
  for (char& ch : n) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Cases, ReferenceTest, ::testing::ValuesIn(cases_or_placeholder()),
                         case_name);

// Q8_0 KV against the same (F16-KV) references, held to the quantized bounds (0.25 /
// 0.06, top-1 where llama.cpp's margin exceeds 0.25) whatever the weights; models whose
// head size is no multiple of 32 cannot take it and are skipped. docs/engine.md has the
// figures, and Q4_0 KV's (measured, not held to a bound here).
class ReferenceKvQ8Test : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceKvQ8Test, AgreesWithLlamaCppWithinTheQuantizedBounds) {
  const std::string path = GetParam();
  if (path.empty()) GTEST_SKIP() << "SKIPPED: no reference cases under " HEARTH_SHARED_DIR;
  auto c = parse_reference_case(path);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const std::string model = resolve_reference_model(*c);
  if (model.empty()) GTEST_SKIP() << "SKIPPED: model " << c->model_file << " not found";
  Status error;
  Engine* engine = engine_for(model, error, KvType::kQ8_0);
  if (engine == nullptr && error.message().find("kv_type") != std::string::npos)
    GTEST_SKIP() << "SKIPPED: " << error.message();
  ASSERT_NE(engine, nullptr) << error.to_string();
  auto r = run_reference_case(*engine, *c);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::printf("reference q8_0-kv %-36s max_abs_diff %.6f mean_abs_diff %.6f top1_violations %d\n",
              fs::path(path).filename().c_str(), r->max_abs_diff, r->mean_abs_diff,
              r->top1_violations);
  EXPECT_LE(r->max_abs_diff, r->bounds.max_abs);
  EXPECT_LE(r->mean_abs_diff, r->bounds.mean_abs);
  EXPECT_EQ(r->top1_violations, 0);
}

INSTANTIATE_TEST_SUITE_P(KvQ8Cases, ReferenceKvQ8Test, ::testing::ValuesIn(cases_or_placeholder()),
                         case_name);

}  // namespace
}  // namespace hearth::engine
