// `hearth logits`: greedy generation printed in the llama.cpp reference format
// (/work/shared/reference/README.md), or a teacher-forced check against a reference case.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/device_flags.h"
#include "cli/registry.h"
#include "engine/model/reference_check.h"
#include "hearth/engine/engine.h"
#include "hearth/engine/sampler.h"
#include "hearth/engine/tokenizer.h"
#include "server/model_settings.h"

namespace hearth::cli {
namespace {

// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629), or 0 if malformed.
size_t utf8_sequence_length(const std::string& s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  const size_t left = s.size() - i;
  auto cont = [&](size_t k) { return k < s.size() && (b(k) & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return left >= 2 && cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !cont(i + 1) || !cont(i + 2)) return 0;
    if (c == 0xE0 && b(i + 1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(i + 1) >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    if (c == 0xF0 && b(i + 1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(i + 1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

// JSON string literal as the reference files write it.
std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (c < 0x20 || c == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    const size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out + "\"";
}

std::string hex(const std::string& s) {
  if (s.empty()) return "-";
  std::string out;
  char buf[3];
  for (unsigned char c : s) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

// Top five (logit desc, id asc).
std::vector<int32_t> top5(const std::vector<float>& logits) {
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  const size_t k = std::min<size_t>(5, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                    [&](int32_t a, int32_t b) {
                      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
                    });
  ids.resize(k);
  return ids;
}

int fail(const Status& s) {
  std::fprintf(stderr, "hearth logits: %s\n", s.to_string().c_str());
  return 1;
}

// --lora FILE[:SCALE]: the adapters, applied to every sequence of `engine` in order.
Status apply_lora(Engine& engine, const std::vector<std::string>& args, int32_t n_seq) {
  std::vector<LoraUse> uses;
  for (const std::string& arg : args) {
    HEARTH_ASSIGN_OR_RETURN(runtime::AdapterSpec spec, server::parse_adapter_arg(arg));
    HEARTH_ASSIGN_OR_RETURN(std::shared_ptr<const LoraAdapter> a, engine.load_lora(spec.path));
    uses.push_back(LoraUse{std::move(a), spec.scale});
  }
  for (int32_t q = 0; q < n_seq; ++q) HEARTH_RETURN_IF_ERROR(engine.set_lora(q, uses));
  return OkStatus();
}

// opts: the threads, KV type and device of the flags.
int generate(const std::string& model, const std::string& prompt, int n, EngineOptions opts,
             const std::vector<std::string>& lora, const std::string& out) {
  opts.n_seq_max = 2;
  auto loaded = Engine::load(model, opts);
  if (!loaded.ok()) return fail(loaded.status());
  Engine& engine = **loaded;
  if (Status st = apply_lora(engine, lora, opts.n_seq_max); !st.ok()) return fail(st);
  const ModelInfo& info = engine.info();
  const Tokenizer& tok = engine.tokenizer();
  auto ids = tok.encode(prompt, /*add_special=*/true, /*parse_special=*/false);
  if (!ids.ok()) return fail(ids.status());
  if (ids->empty()) return fail(InvalidArgument("the prompt tokenizes to nothing"));
  const size_t V = static_cast<size_t>(info.n_vocab);

  // Pass 1: the prompt in one batch, then one token at a time.
  std::vector<BatchToken> batch;
  for (size_t i = 0; i < ids->size(); ++i) {
    batch.push_back({(*ids)[i], static_cast<int32_t>(i), 0, i + 1 == ids->size()});
  }
  std::vector<float> logits;
  std::vector<std::vector<float>> step_logits;
  std::vector<int32_t> generated;
  int32_t pos = static_cast<int32_t>(ids->size());
  for (int i = 0; i < n; ++i) {
    if (i > 0) batch.assign(1, BatchToken{generated.back(), pos++, 0, true});
    Status st = engine.forward(batch, logits);
    if (!st.ok()) return fail(st);
    step_logits.push_back(logits);
    generated.push_back(Sampler::greedy(logits));
  }
  // Pass 2 (batch_variance): everything token by token on seq 1.
  double variance = 0;
  std::vector<int32_t> all = *ids;
  all.insert(all.end(), generated.begin(), generated.end());
  const size_t P = ids->size();
  for (size_t i = 0; i + 1 < P + static_cast<size_t>(n); ++i) {
    const bool want = i + 1 >= P;  // position i gives step i + 1 - P
    BatchToken t{all[i], static_cast<int32_t>(i), 1, want};
    Status st = engine.forward(std::span<const BatchToken>(&t, 1), logits);
    if (!st.ok()) return fail(st);
    if (!want) continue;
    const auto& ref = step_logits[i + 1 - P];
    for (size_t v = 0; v < V; ++v) {
      variance = std::max(variance, static_cast<double>(std::fabs(logits[v] - ref[v])));
    }
  }

  if (!out.empty()) {  // every step's logits: raw float32 LE, one row of n_vocab per step
    FILE* f = std::fopen(out.c_str(), "wb");
    bool ok = f != nullptr;
    for (const auto& row : step_logits)
      ok = ok && std::fwrite(row.data(), sizeof(float), row.size(), f) == row.size();
    if (f != nullptr) ok = std::fclose(f) == 0 && ok;
    if (!ok) return fail(IoError("--out " + out + ": cannot write"));
  }
  std::printf("model %s arch %s n_vocab %zu add_bos %d\n",
              std::filesystem::path(model).filename().c_str(), info.arch.c_str(), V,
              tok.add_bos() ? 1 : 0);
  std::printf("prompt_text %s\n", json_quote(prompt).c_str());
  std::printf("prompt_tokens %zu", ids->size());
  for (int32_t id : *ids) std::printf(" %d", id);
  std::printf("\n");
  std::string text;
  for (int i = 0; i < n; ++i) {
    std::printf("step %d token %d top5", i, generated[i]);
    for (int32_t id : top5(step_logits[i])) std::printf(" %d:%.6f", id, step_logits[i][id]);
    std::printf("\n");
    text += tok.token_to_piece(generated[i], /*render_special=*/true);
  }
  std::printf("batch_variance max_abs_diff %.9g over %zu logits\n", variance,
              static_cast<size_t>(n) * V);
  std::printf("text %s\n", json_quote(text).c_str());
  std::printf("text_hex %s\n", hex(text).c_str());
  return 0;
}

int check_reference(const std::string& case_path, std::string model, EngineOptions opts,
                    const std::vector<std::string>& lora, const std::string& out) {
  auto c = engine::parse_reference_case(case_path);
  if (!c.ok()) return fail(c.status());
  if (model.empty()) model = engine::resolve_reference_model(*c);
  if (model.empty()) {
    return fail(NotFound("model " + c->model_file + " of " + case_path +
                         " is in neither models/ nor ../models/"));
  }
  opts.n_seq_max = 1;
  auto loaded = Engine::load(model, opts);
  if (!loaded.ok()) return fail(loaded.status());
  if (Status st = apply_lora(**loaded, lora, opts.n_seq_max); !st.ok()) return fail(st);
  auto r = engine::run_reference_case(**loaded, *c, /*keep_rows=*/!out.empty());
  if (!r.ok()) return fail(r.status());
  if (!out.empty()) {  // every step's logits, teacher-forced: raw float32 LE rows of n_vocab
    FILE* f = std::fopen(out.c_str(), "wb");
    const bool ok = f != nullptr &&
                    std::fwrite(r->rows.data(), sizeof(float), r->rows.size(), f) == r->rows.size();
    if (f != nullptr && std::fclose(f) != 0)
      return fail(IoError("--out " + out + ": cannot write"));
    if (!ok) return fail(IoError("--out " + out + ": cannot write"));
  }
  for (size_t i = 0; i < c->steps.size(); ++i) {
    std::printf("step %zu token %d top5", i, r->argmax[i]);
    for (size_t k = 0; k < 5; ++k) {
      std::printf(" %d:%.6f", c->steps[i].top5[k].first, r->logits[i][k]);
    }
    std::printf("\n");
  }
  std::printf(
      "summary max_abs_diff %.6g mean_abs_diff %.6g top1_violations %d steps %zu "
      "tokens_match %d rerouted_steps %d\n",
      r->max_abs_diff, r->mean_abs_diff, r->top1_violations, c->steps.size(),
      r->prompt_tokens_match ? 1 : 0, r->rerouted_steps);
  if (!r->prompt_tokens_match) {
    std::fprintf(stderr, "hearth logits: tokenizing prompt_text does not give prompt_tokens\n");
  }
  return r->pass ? 0 : 1;
}

Registrar reg("logits", [](CLI::App& root) {
  struct Args {
    std::string model, prompt, reference;
    int n = 24;
    int threads = 2;
    std::string kv_type = "f16";
    std::vector<std::string> lora;
    std::string out;
    DeviceFlags device;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = root.add_subcommand(
      "logits", "Greedy generation in llama.cpp reference format, or check a reference case");
  cmd->add_option("-m,--model", args->model, "GGUF model file");
  cmd->add_option("-p,--prompt", args->prompt, "prompt text");
  cmd->add_option("-n,--n-predict", args->n, "tokens to generate")->check(CLI::Range(1, 100000));
  cmd->add_option("--reference", args->reference, "reference case file to check against");
  cmd->add_option("-t,--threads", args->threads, "threads")->check(CLI::Range(1, 256));
  cmd->add_option("--kv-type", args->kv_type,
                  "element type of the KV cache: f16 (default), q8_0 or q4_0")
      ->check(CLI::IsMember({"f16", "q8_0", "q4_0"}));
  add_device_flags(cmd, &args->device);
  cmd->add_option("--lora", args->lora,
                  "LoRA adapter FILE[:SCALE] (llama.cpp's GGUF adapter format; repeatable)");
  cmd->add_option("--out", args->out,
                  "write every step's logits (float32 LE, n_vocab per step) to this file (with "
                  "--reference: the teacher-forced steps')");
  cmd->callback([args] {
    EngineOptions opts;
    opts.n_threads = args->threads;
    opts.kv_type = *kv_type_from_name(args->kv_type);
    if (Status s = apply_device_flags(args->device, opts); !s.ok()) {
      exit_code() = fail(s);
      return;
    }
    if (!args->reference.empty()) {
      exit_code() = check_reference(args->reference, args->model, opts, args->lora, args->out);
    } else if (args->model.empty()) {
      exit_code() = fail(InvalidArgument("-m MODEL is required (or --reference CASE)"));
    } else {
      exit_code() = generate(args->model, args->prompt, args->n, opts, args->lora, args->out);
    }
  });
});

}  // namespace
}  // namespace hearth::cli
