// The engine on a GPU (EngineOptions::device "cuda:0", docs/gpu.md), end to end: agreement
// with llama.cpp's reference cases within the CPU's bounds, batch invariance on the device
// (logits and KV bytes of a position are the same bits whatever the batching and the
// other sequences), warm == cold (a row restored by kv_unpack, kv_import_* or kv_copy
// continues bit for bit like the sequence that computed it), partial offload
// (n_gpu_layers), and the errors of what the GPU path does not take.
//
// Tests that need a GPU skip where there is none; the error tests run everywhere.
// HEARTH_SHARED_DIR in the environment overrides the compiled-in test data folder (the
// GPU machine gets a copy of part of it beside the tests).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/reference_check.h"
#include "hearth/engine/engine.h"
#include "test_tokens.h"
#if HEARTH_HAVE_CUDA
#include "engine/cuda/cuda_api.h"
#endif

namespace hearth {
namespace {

namespace fs = std::filesystem;

fs::path shared_dir() {
  const char* env = std::getenv("HEARTH_SHARED_DIR");
  return env != nullptr && *env != '\0' ? fs::path(env) : fs::path(HEARTH_SHARED_DIR);
}

std::string model_path(const std::string& file) {
  const fs::path ref = shared_dir() / "reference";
  for (const fs::path& p : {ref / "models" / file, ref / "architectures" / "models" / file,
                            shared_dir() / "models" / file}) {
    std::error_code ec;
    if (fs::exists(p, ec)) return p.string();
  }
  return "";
}

// Why the GPU tests cannot run here ("" = they can).
std::string no_gpu_reason() {
#if HEARTH_HAVE_CUDA
  std::string why;
  if (!engine::cuda::available(0, &why)) return "no usable CUDA device: " + why;
  return "";
#else
  return "built without CUDA (HEARTH_CUDA=1)";
#endif
}

#define REQUIRE_GPU()                        \
  do {                                       \
    const std::string why = no_gpu_reason(); \
    if (!why.empty()) {                      \
      GTEST_SKIP() << "SKIPPED: " << why;    \
    }                                        \
  } while (0)

std::unique_ptr<Engine> load_on(const std::string& path, const std::string& device,
                                int32_t n_gpu_layers = -1, int32_t n_batch = 512,
                                int32_t n_seq = 4) {
  EngineOptions o;
  o.device = device;
  o.n_gpu_layers = n_gpu_layers;
  o.n_batch = n_batch;
  o.n_seq_max = n_seq;
  o.n_ctx = 1024;
  o.n_threads = 2;
  auto e = Engine::load(path, o);
  EXPECT_TRUE(e.ok()) << path << " on " << device << ": " << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

std::vector<int32_t> random_tokens(int32_t n, int32_t n_vocab, uint32_t seed) {
  return testing::lcg_tokens(n, n_vocab, seed);
}

// Feeds `tokens` to seq in chunks of `chunk` (every position's logits), optionally with
// `other` tokens of sequence other_seq interleaved in every call; returns seq's logits.
std::vector<float> run_seq(Engine& e, int32_t seq, const std::vector<int32_t>& tokens, size_t chunk,
                           int32_t other_seq = -1, const std::vector<int32_t>& other = {}) {
  std::vector<float> out;
  std::vector<float> logits;
  size_t other_at = 0;
  const size_t V = static_cast<size_t>(e.info().n_vocab);
  for (size_t b = 0; b < tokens.size(); b += chunk) {
    std::vector<BatchToken> batch;
    const size_t end = std::min(tokens.size(), b + chunk);
    // The other sequence's tokens go first, so seq's rows are not at the batch's start.
    for (size_t j = 0; j < 3 && other_seq >= 0 && other_at < other.size(); ++j, ++other_at) {
      batch.push_back({other[other_at], static_cast<int32_t>(other_at), other_seq, j == 1});
    }
    const size_t first = batch.size();
    for (size_t i = b; i < end; ++i)
      batch.push_back({tokens[i], static_cast<int32_t>(i), seq, true});
    const Status st = e.forward(batch, logits);
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) return out;
    // Rows with logits come in batch order: the other sequence's one (if any) first.
    size_t skip = 0;
    for (size_t j = 0; j < first; ++j) skip += batch[j].logits ? 1 : 0;
    out.insert(out.end(), logits.begin() + static_cast<std::ptrdiff_t>(skip * V), logits.end());
  }
  return out;
}

size_t first_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return i;
  }
  return a.size();
}

// ---- errors (any machine) -------------------------------------------------------------

TEST(CudaEngineErrors, BadDeviceStringNamesIt) {
  const std::string model = model_path("small-llama-q8_0.gguf");
  if (model.empty()) GTEST_SKIP() << "SKIPPED: small-llama-q8_0.gguf not found";
  EngineOptions o;
  o.device = "gpu0";
  auto e = Engine::load(model, o);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("gpu0"), std::string::npos) << e.status().to_string();
}

TEST(CudaEngineErrors, UnusableDeviceFailsTheLoadNamingIt) {
  const std::string model = model_path("small-llama-q8_0.gguf");
  if (model.empty()) GTEST_SKIP() << "SKIPPED: small-llama-q8_0.gguf not found";
  EngineOptions o;
  o.device = "cuda:63";  // no machine has 64 GPUs
  auto e = Engine::load(model, o);
  ASSERT_FALSE(e.ok());
  const std::string m = e.status().message();
  EXPECT_TRUE(m.find("cuda:63") != std::string::npos || m.find("63") != std::string::npos) << m;
}

TEST(CudaEngineErrors, UnimplementedFeaturesAreRefusedByName) {
  const std::string model = model_path("small-gemma2-q8_0.gguf");
  if (model.empty()) GTEST_SKIP() << "SKIPPED: small-gemma2-q8_0.gguf not found";
  EngineOptions o;
  o.device = "cuda:0";
  auto e = Engine::load(model, o);
  ASSERT_FALSE(e.ok());
#if HEARTH_HAVE_CUDA
  EXPECT_NE(e.status().message().find("gemma2"), std::string::npos) << e.status().to_string();
#else
  EXPECT_NE(e.status().message().find("HEARTH_CUDA"), std::string::npos) << e.status().to_string();
#endif
}

TEST(CudaEngineErrors, NGpuLayersZeroIsTheCpu) {
  const std::string model = model_path("small-llama-q8_0.gguf");
  if (model.empty()) GTEST_SKIP() << "SKIPPED: small-llama-q8_0.gguf not found";
#if !HEARTH_HAVE_CUDA
  GTEST_SKIP() << "SKIPPED: built without CUDA";
#endif
  // n_gpu_layers 0 never touches the GPU, so it loads on any machine of a CUDA build.
  auto gpu0 = load_on(model, "cuda:0", 0);
  auto cpu = load_on(model, "cpu");
  ASSERT_TRUE(gpu0 && cpu);
  EXPECT_EQ(gpu0->info().device, "cpu");
  EXPECT_EQ(gpu0->numerics_id(), cpu->numerics_id());
}

// ---- on a GPU ---------------------------------------------------------------------------

// The GPU-capable reference cases: llama-family dense models whose weight types have
// CUDA kernels.
bool gpu_case(const engine::ReferenceCase& c) {
  if (c.arch != "llama" && c.arch != "qwen2" && c.arch != "qwen3" && c.arch != "phi3") return false;
  for (const char* bad : {"q2_k", "q3_k", "hd48", "moe", "mixtral"}) {
    if (c.model_file.find(bad) != std::string::npos) return false;
  }
  return true;
}

TEST(CudaEngine, AgreesWithLlamaCppReferenceCases) {
  REQUIRE_GPU();
  std::vector<std::string> cases;
  const fs::path root = shared_dir() / "reference";
  for (const fs::path& dir : {root, root / "architectures"}) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".txt") cases.push_back(e.path().string());
  }
  std::sort(cases.begin(), cases.end());
  int ran = 0;
  std::string last_model;
  std::unique_ptr<Engine> engine;
  for (const std::string& path : cases) {
    auto c = engine::parse_reference_case(path);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    if (!gpu_case(*c)) continue;
    const std::string model = engine::resolve_reference_model(*c);
    if (model.empty()) continue;
    if (model != last_model) {
      EngineOptions o;
      o.device = "cuda:0";
      o.n_seq_max = 1;
      o.n_threads = 2;
      auto e = Engine::load(model, o);
      ASSERT_TRUE(e.ok()) << model << ": " << e.status().to_string();
      engine = std::move(e).value();
      last_model = model;
    }
    auto r = engine::run_reference_case(*engine, *c);
    ASSERT_TRUE(r.ok()) << path << ": " << r.status().to_string();
    std::printf("gpu reference %-36s max_abs_diff %.6f mean_abs_diff %.6f top1_violations %d %s\n",
                fs::path(path).filename().c_str(), r->max_abs_diff, r->mean_abs_diff,
                r->top1_violations, r->pass ? "PASS" : "FAIL");
    EXPECT_TRUE(r->pass) << path << ": max " << r->max_abs_diff << " (bound " << r->bounds.max_abs
                         << "), mean " << r->mean_abs_diff << " (bound " << r->bounds.mean_abs
                         << "), top-1 misses " << r->top1_violations;
    ++ran;
  }
  std::printf("gpu reference cases run: %d\n", ran);
  EXPECT_GT(ran, 0) << "no GPU-capable reference case under " << root;
}

// One model per weight type the GPU takes, plus the other architectures
// (small-qwen3-q4_k_m: Q4_K with Q5_0 attn_q rows, not a multiple of 256).
const char* const kInvarianceModels[] = {
    "small-llama-q4_0.gguf",
    "small-llama-q8_0.gguf",
    "small-llama-q4_k_m.gguf",
    "small-llama-q5_k_m.gguf",
    "small-llama-q6_k.gguf",
    "small-llama-f16.gguf",
    "small-llama-bf16.gguf",
    "small-llama-f32.gguf",
    "small-qwen2-q4_k_m.gguf",
    "small-qwen3-f16.gguf",
    "small-qwen3-q4_k_m.gguf",
    "small-phi3-q8_0.gguf",
    "small-llama-tied-f16.gguf",
#if !HEARTH_GPU_EMULATED
    // The other 32-element formats' kernels. The emulated GPU (test_gpu_emu) dequantizes
    // every type to floats: there they would add time, not checks.
    "small-llama-q4_1.gguf",
    "small-llama-q5_0.gguf",
    "small-llama-q5_1.gguf",
#endif
};

// The weight types without a CUDA kernel (Q2_K here) fail the load naming the tensor and
// the type; the 32-element formats a K-quant file falls back to load.
TEST(CudaEngine, WeightTypesWithoutAKernelAreRefusedByName) {
  REQUIRE_GPU();
  const std::string q2 = model_path("small-llama-q2_k.gguf");
  if (q2.empty()) GTEST_SKIP() << "SKIPPED: small-llama-q2_k.gguf not found";
  EngineOptions o;
  o.device = "cuda:0";
  auto e = Engine::load(q2, o);
  ASSERT_FALSE(e.ok()) << "a Q2_K model loaded on the GPU";
  const std::string m = e.status().message();
  EXPECT_NE(m.find("q2_K"), std::string::npos) << m;
  EXPECT_NE(m.find("no CUDA kernel"), std::string::npos) << m;
  EXPECT_NE(m.find("tensor "), std::string::npos) << m;
  for (const char* file : {"small-llama-q4_1.gguf", "small-llama-q5_0.gguf",
                           "small-llama-q5_1.gguf", "small-qwen3-q4_k_m.gguf"}) {
    const std::string model = model_path(file);
    if (model.empty()) continue;
    auto ok = Engine::load(model, o);
    EXPECT_TRUE(ok.ok()) << file << ": " << ok.status().to_string();
    if (ok.ok()) {
      EXPECT_EQ((*ok)->info().device.rfind("cuda:0", 0), 0u)
          << file << ": " << (*ok)->info().device;
    }
  }
}

TEST(CudaEngine, BatchInvariantOnTheDevice) {
  REQUIRE_GPU();
  int ran = 0;
  for (const char* file : kInvarianceModels) {
    const std::string model = model_path(file);
    if (model.empty()) continue;
    SCOPED_TRACE(file);
    auto one = load_on(model, "cuda:0");
    auto small_batch = load_on(model, "cuda:0", -1, /*n_batch=*/7);
    ASSERT_TRUE(one && small_batch);
    const int32_t V = one->info().n_vocab;
    const auto tokens = random_tokens(150, V, 7);
    const auto other = random_tokens(200, V, 99);
    const std::vector<float> base = run_seq(*one, 0, tokens, tokens.size());
    std::vector<uint8_t> kv_base;
    ASSERT_TRUE(one->kv_pack(0, static_cast<int32_t>(tokens.size()), kv_base).ok());
    struct Variant {
      const char* name;
      Engine* e;
      size_t chunk;
      int32_t other_seq;
    } variants[] = {{"token by token", one.get(), 1, -1},
                    {"chunks of 13 beside another sequence", one.get(), 13, 2},
                    {"n_batch 7", small_batch.get(), tokens.size(), -1},
                    {"chunks of 64 beside another sequence, n_batch 7", small_batch.get(), 64, 3}};
    for (const Variant& v : variants) {
      ASSERT_TRUE(v.e->seq_clear(1).ok());
      if (v.other_seq >= 0) {
        ASSERT_TRUE(v.e->seq_clear(v.other_seq).ok());
      }
      const std::vector<float> got = run_seq(*v.e, 1, tokens, v.chunk, v.other_seq, other);
      const size_t d = first_diff(base, got);
      EXPECT_EQ(d, base.size()) << v.name << ": logits differ first at position " << d / V << " id "
                                << d % V << ": " << base[d] << " vs " << got[d];
      std::vector<uint8_t> kv;
      ASSERT_TRUE(v.e->kv_pack(1, static_cast<int32_t>(tokens.size()), kv).ok());
      EXPECT_TRUE(kv == kv_base) << v.name << ": KV bytes differ";
    }
    ++ran;
  }
  EXPECT_GT(ran, 0);
}

TEST(CudaEngine, RestoredRowsContinueBitForBit) {
  REQUIRE_GPU();
  const std::string model = model_path("small-llama-q4_k_m.gguf");
  ASSERT_FALSE(model.empty());
  auto e = load_on(model, "cuda:0");
  ASSERT_TRUE(e);
  const int32_t V = e->info().n_vocab;
  const auto prompt = random_tokens(200, V, 5);
  const auto more = random_tokens(40, V, 6);
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), more.begin(), more.end());
  // Cold: the whole thing on seq 0.
  const std::vector<float> cold = run_seq(*e, 0, all, 64);
  const std::vector<float> cold_tail(cold.end() - static_cast<std::ptrdiff_t>(more.size() * V),
                                     cold.end());
  // The prompt's row, packed from seq 0.
  std::vector<uint8_t> row;
  ASSERT_TRUE(e->kv_pack(0, static_cast<int32_t>(prompt.size()), row).ok());
  ASSERT_EQ(row.size(), e->kv_pack_bytes(static_cast<int32_t>(prompt.size())));
  auto continue_on = [&](int32_t seq) {
    std::vector<float> out;
    std::vector<float> logits;
    for (size_t i = 0; i < more.size(); ++i) {
      const BatchToken t{more[i], static_cast<int32_t>(prompt.size() + i), seq, true};
      EXPECT_TRUE(e->forward(std::span(&t, 1), logits).ok());
      out.insert(out.end(), logits.begin(), logits.end());
    }
    return out;
  };
  // kv_unpack into seq 1.
  ASSERT_TRUE(e->kv_unpack(1, row, static_cast<int32_t>(prompt.size())).ok());
  std::vector<float> warm = continue_on(1);
  size_t d = first_diff(cold_tail, warm);
  EXPECT_EQ(d, cold_tail.size()) << "kv_unpack: differs first at step " << d / V;
  // kv_import_spans / commit into seq 2.
  auto spans = e->kv_import_spans(2, static_cast<int32_t>(prompt.size()));
  ASSERT_TRUE(spans.ok()) << spans.status().to_string();
  size_t at = 0;
  for (std::span<uint8_t> s : *spans) {
    ASSERT_LE(at + s.size(), row.size());
    std::memcpy(s.data(), row.data() + at, s.size());
    at += s.size();
  }
  ASSERT_EQ(at, row.size());
  ASSERT_TRUE(e->kv_import_commit(2, static_cast<int32_t>(prompt.size())).ok());
  warm = continue_on(2);
  d = first_diff(cold_tail, warm);
  EXPECT_EQ(d, cold_tail.size()) << "kv_import: differs first at step " << d / V;
  // kv_copy (a fork) into seq 3.
  ASSERT_TRUE(e->kv_copy(0, 3, static_cast<int32_t>(prompt.size())).ok());
  warm = continue_on(3);
  d = first_diff(cold_tail, warm);
  EXPECT_EQ(d, cold_tail.size()) << "kv_copy: differs first at step " << d / V;
  // And the restored rows pack back to the same bytes.
  std::vector<uint8_t> again;
  ASSERT_TRUE(e->kv_pack(2, static_cast<int32_t>(prompt.size()), again).ok());
  EXPECT_TRUE(again == row);
}

TEST(CudaEngine, PartialOffloadAgreesAndStaysInvariant) {
  REQUIRE_GPU();
  const std::string model = model_path("small-llama-q8_0.gguf");
  ASSERT_FALSE(model.empty());
  auto cpu = load_on(model, "cpu");
  ASSERT_TRUE(cpu);
  const int32_t n_layer = cpu->info().n_layer;
  ASSERT_GE(n_layer, 2);
  auto half = load_on(model, "cuda:0", n_layer / 2);
  auto all = load_on(model, "cuda:0", -1);
  ASSERT_TRUE(half && all);
  EXPECT_EQ(half->info().n_gpu_layers, n_layer / 2);
  EXPECT_EQ(all->info().n_gpu_layers, n_layer);
  EXPECT_NE(half->numerics_id(), all->numerics_id());
  EXPECT_NE(half->numerics_id(), cpu->numerics_id());
  EXPECT_NE(all->numerics_id(), cpu->numerics_id());
  const int32_t V = cpu->info().n_vocab;
  const auto tokens = random_tokens(120, V, 11);
  const std::vector<float> ref = run_seq(*cpu, 0, tokens, tokens.size());
  for (Engine* e : {half.get(), all.get()}) {
    const std::vector<float> a = run_seq(*e, 0, tokens, tokens.size());
    const std::vector<float> b = run_seq(*e, 1, tokens, 1);
    ASSERT_EQ(a.size(), ref.size());
    EXPECT_EQ(first_diff(a, b), a.size()) << e->info().n_gpu_layers << " GPU layers: not invariant";
    double max_diff = 0;
    for (size_t i = 0; i < a.size(); ++i)
      max_diff = std::max(max_diff, std::abs(double(a[i]) - ref[i]));
    std::printf("gpu %d/%d layers: max |logit - cpu logit| %.5f over %zu positions\n",
                e->info().n_gpu_layers, n_layer, max_diff, tokens.size());
    EXPECT_LT(max_diff, 0.25) << e->info().n_gpu_layers << " GPU layers vs the CPU";
    // Rows of a split pack and unpack like any.
    std::vector<uint8_t> row;
    ASSERT_TRUE(e->kv_pack(0, 100, row).ok());
    ASSERT_TRUE(e->kv_unpack(2, row, 100).ok());
    std::vector<uint8_t> again;
    ASSERT_TRUE(e->kv_pack(2, 100, again).ok());
    EXPECT_TRUE(again == row);
  }
}

TEST(CudaEngine, EmbeddingsRunOnTheDevice) {
  REQUIRE_GPU();
  const std::string model = model_path("small-llama-q8_0.gguf");
  ASSERT_FALSE(model.empty());
  auto gpu = load_on(model, "cuda:0");
  auto cpu = load_on(model, "cpu");
  ASSERT_TRUE(gpu && cpu);
  const auto tokens = random_tokens(50, cpu->info().n_vocab, 3);
  auto a = gpu->embed(tokens);
  auto b = cpu->embed(tokens);
  ASSERT_TRUE(a.ok() && b.ok());
  double dot = 0;
  for (size_t i = 0; i < a->size(); ++i) dot += double((*a)[i]) * (*b)[i];
  EXPECT_GT(dot, 0.999) << "GPU and CPU embeddings point apart (cosine " << dot << ")";
}

// HEARTH_GPU_BENCH=1 and HEARTH_GPU_BENCH_MODEL=<gguf>: restoring a row into device KV
// (kv_import_spans, the copy into them, kv_import_commit) against one host-to-device copy
// of the same bytes from pinned memory, the floor of any restore; and the link's peak.
TEST(CudaEngineBench, RestoreVsHostToDeviceCopy) {
  REQUIRE_GPU();
  const char* on = std::getenv("HEARTH_GPU_BENCH");
  const char* model = std::getenv("HEARTH_GPU_BENCH_MODEL");
  if (on == nullptr || model == nullptr) {
    GTEST_SKIP() << "SKIPPED: set HEARTH_GPU_BENCH=1 and HEARTH_GPU_BENCH_MODEL";
  }
#if HEARTH_HAVE_CUDA
  namespace cu = engine::cuda;
  EngineOptions o;
  o.device = "cuda:0";
  o.n_ctx = 4096;
  o.n_seq_max = 2;
  auto loaded = Engine::load(model, o);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  Engine& e = **loaded;
  const int32_t V = e.info().n_vocab;
  for (int32_t n : {512, 2048}) {
    const auto tokens = random_tokens(n, V, 3);
    ASSERT_TRUE(e.seq_clear(0).ok());
    std::vector<BatchToken> batch;
    for (int32_t i = 0; i < n; ++i) batch.push_back({tokens[i], i, 0, i == n - 1});
    std::vector<float> logits;
    const auto c0 = std::chrono::steady_clock::now();
    for (size_t b = 0; b < batch.size(); b += 512) {
      const auto part = std::span(batch).subspan(b, std::min<size_t>(512, batch.size() - b));
      ASSERT_TRUE(e.forward(part, logits).ok());
    }
    const double cold_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();
    std::vector<uint8_t> row;
    ASSERT_TRUE(e.kv_pack(0, n, row).ok());
    std::vector<double> restore_ms, h2d_ms;
    cu::PinnedBuffer pinned;
    cu::DeviceBuffer dev;
    cu::Stream stream;
    ASSERT_TRUE(pinned.allocate(row.size()).empty());
    ASSERT_TRUE(dev.allocate(row.size()).empty());
    ASSERT_TRUE(stream.create().empty());
    std::memcpy(pinned.data(), row.data(), row.size());
    for (int rep = 0; rep < 11; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      auto spans = e.kv_import_spans(1, n);
      ASSERT_TRUE(spans.ok());
      size_t at = 0;
      for (std::span<uint8_t> sp : *spans) {
        std::memcpy(sp.data(), row.data() + at, sp.size());
        at += sp.size();
      }
      ASSERT_TRUE(e.kv_import_commit(1, n).ok());
      restore_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      cu::Timer timer;
      float ms = 0;
      ASSERT_TRUE(timer.start(stream).empty());
      ASSERT_TRUE(cu::copy_to_device(dev.data(), pinned.data(), row.size(), stream).empty());
      ASSERT_TRUE(timer.stop(stream, &ms).empty());
      h2d_ms.push_back(ms);
    }
    std::sort(restore_ms.begin(), restore_ms.end());
    std::sort(h2d_ms.begin(), h2d_ms.end());
    const double r = restore_ms[restore_ms.size() / 2], h = h2d_ms[h2d_ms.size() / 2];
    std::printf(
        "gpu restore %5d tokens: row %.1f MiB, cold prefill %.2f ms, restore %.3f ms (%.1f GB/s), "
        "pinned host-to-device copy %.3f ms (%.1f GB/s), restore / copy %.2fx, cold / restore "
        "%.0fx\n",
        n, row.size() / 1048576.0, cold_ms, r, row.size() / r / 1e6, h, row.size() / h / 1e6, r / h,
        cold_ms / r);
  }
#endif
}

}  // namespace
}  // namespace hearth
