// See gen_model.h; the shapes are in gen_model_presets.cpp, the tensors and keys of each
// family in gen_model_plan.cpp. Weights stream to disk one tensor at a time; within a tensor,
// chunks of rows are generated (and converted) in parallel, each chunk from its own
// RNG stream, so the bytes do not depend on the number of threads.
#include "cli/gen_model.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string_view>
#include <thread>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "cli/gen_model_rng.h"
#include "cli/gen_model_vocab.h"
#include "engine/quant/quant.h"
#include "hearth/engine/fp16.h"

namespace hearth::cli {
namespace {

using gguf::TensorType;

constexpr WeightType kWeightTypes[] = {
    {"f32", 0, TensorType::kF32},    {"f16", 1, TensorType::kF16},
    {"bf16", 32, TensorType::kBF16}, {"q8_0", 7, TensorType::kQ8_0},
    {"q4_0", 2, TensorType::kQ4_0},  {"q4_k_m", 15, TensorType::kQ4_K},
};

// Bytes of data for a tensor; the writer validated the shape already.
uint64_t tensor_bytes(const PlannedTensor& t) {
  uint64_t rows = 1;
  for (size_t d = 1; d < t.dims.size(); ++d) rows *= t.dims[d];
  return gguf::row_bytes(t.type, t.dims[0]) * rows;
}

// Converts n floats to `type` at dst.
Status convert(TensorType type, const float* src, uint8_t* dst, int64_t n) {
  switch (type) {
    case TensorType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return OkStatus();
    case TensorType::kF16: {
      int64_t i = 0;
#if defined(__F16C__)
      // Hardware conversion rounds to nearest even, exactly as fp32_to_fp16.
      for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * i), h);
      }
#endif
      for (; i < n; ++i) {
        const uint16_t h = fp32_to_fp16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return OkStatus();
    }
    case TensorType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = fp32_to_bf16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return OkStatus();
    default:
      return engine::quantize_row(type, src, dst, n);
  }
}

// Fills one tensor: chunks of rows, each from stream (seed, tensor index, chunk).
Status fill_tensor(const PlannedTensor& t, size_t index, uint64_t seed, double stddev,
                   unsigned max_threads, std::span<uint8_t> dst) {
  const uint64_t ne0 = t.dims[0];
  uint64_t rows = 1;
  for (size_t d = 1; d < t.dims.size(); ++d) rows *= t.dims[d];
  const uint64_t row_bytes = gguf::row_bytes(t.type, ne0);
  const uint64_t rows_per_chunk = std::max<uint64_t>(1, (uint64_t{1} << 16) / ne0);
  const uint64_t n_chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  std::atomic<uint64_t> next{0};
  std::mutex mu;
  Status first_error;
  auto worker = [&] {
    std::vector<float> scratch(rows_per_chunk * ne0);
    for (;;) {
      const uint64_t chunk = next.fetch_add(1);
      if (chunk >= n_chunks) return;
      const uint64_t row0 = chunk * rows_per_chunk;
      const uint64_t n_rows = std::min(rows_per_chunk, rows - row0);
      const size_t n = static_cast<size_t>(n_rows * ne0);
      if (t.is_norm) {
        std::fill(scratch.begin(), scratch.begin() + static_cast<ptrdiff_t>(n), 1.0f);
      } else {
        NormalGenerator gen(stream_seed(seed, index, chunk));
        gen.fill(scratch.data(), n, stddev);
      }
      Status st =
          convert(t.type, scratch.data(), dst.data() + row0 * row_bytes, static_cast<int64_t>(n));
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) first_error = st;
        next.store(n_chunks);
        return;
      }
    }
  };
  const unsigned hw =
      max_threads > 0 ? max_threads : std::max(1u, std::thread::hardware_concurrency());
  const unsigned n_threads = static_cast<unsigned>(std::min<uint64_t>(hw, n_chunks));
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < n_threads; ++i) threads.emplace_back(worker);
  worker();
  for (auto& th : threads) th.join();
  if (!first_error.ok()) {
    return Status(first_error.code(), "tensor '" + t.name + "': " + first_error.message());
  }
  return OkStatus();
}

// "hearth-gen-<preset>": llama's as before, and the other families' presets named
// after a model ("hearth-gen-qwen3-0.6b"); their generic shapes get the family
// ("hearth-gen-qwen3-tiny"). Never "phi3": llama.cpp applies Phi-3 vocabulary fix-ups
// to a general.name containing it, and the built-in vocabulary lacks their tokens.
std::string general_name(const ModelPreset& p) {
  const std::string_view arch = p.arch, name = p.name;
  if (arch == "llama" || (name != "tiny" && name != "small")) {
    return std::string("hearth-gen-") + p.name;
  }
  return std::string("hearth-gen-") + (arch == "phi3" ? "phi-3" : p.arch) + "-" + p.name;
}

}  // namespace

const WeightType* find_weight_type(const std::string& name) {
  for (const auto& w : kWeightTypes) {
    if (name == w.name) return &w;
  }
  return nullptr;
}

std::vector<std::string> weight_type_names() {
  std::vector<std::string> out;
  for (const auto& w : kWeightTypes) out.emplace_back(w.name);
  return out;
}

Status generate_model(const GenModelOptions& opts) {
  if (opts.arch) {
    const auto archs = arch_names();
    if (std::find(archs.begin(), archs.end(), *opts.arch) == archs.end()) {
      return InvalidArgument("unknown --arch '" + *opts.arch + "'");
    }
  }
  const std::string preset = opts.preset.value_or("tiny");
  const ModelPreset* p = find_preset(opts.arch, preset);
  if (p == nullptr) {
    std::string known;
    for (const auto& n : opts.arch ? preset_names(*opts.arch) : preset_names())
      known += (known.empty() ? "" : ", ") + n;
    return InvalidArgument("unknown --preset '" + preset + "'" +
                           (opts.arch ? " for --arch " + *opts.arch : std::string()) +
                           " (known: " + known + ")");
  }
  const WeightType* w = find_weight_type(opts.type);
  if (w == nullptr) return InvalidArgument("unknown --type '" + opts.type + "'");
  if (opts.out.empty()) return InvalidArgument("--out is required");
  if (opts.ctx && (*opts.ctx < 1 || *opts.ctx > (1u << 30))) {
    return InvalidArgument("--ctx must be in 1.." + std::to_string(1u << 30) + ", got " +
                           std::to_string(*opts.ctx));
  }
  if ((p->head_dim == 0 && p->n_embd % p->n_head != 0) || p->n_head % p->n_head_kv != 0) {
    return Internal("preset '" + preset + "' has inconsistent head counts");
  }

  gguf::GgufWriter writer;
  writer.set_string("general.architecture", p->gguf_arch());
  writer.set_string("general.name", general_name(*p));
  writer.set_u32("general.file_type", w->llama_ftype);
  writer.set_u32("general.alignment", 32);
  if (gguf::type_traits(w->base)->quantized) writer.set_u32("general.quantization_version", 2);
  writer.set("hearth.gen_model.seed", gguf::Value::u64(opts.seed));

  // Tokenizer first: the vocabulary decides n_vocab.
  std::vector<std::pair<std::string, gguf::Value>> tokenizer_kv;
  uint32_t n_vocab = p->n_vocab;
  if (opts.vocab_from) {
    HEARTH_ASSIGN_OR_RETURN(gguf::GgufFile src, gguf::GgufFile::open(*opts.vocab_from));
    const gguf::Value* tokens = src.find("tokenizer.ggml.tokens");
    if (tokens == nullptr || tokens->as_array() == nullptr || tokens->as_array()->empty()) {
      return InvalidArgument(*opts.vocab_from + ": no tokenizer.ggml.tokens array to copy");
    }
    n_vocab = static_cast<uint32_t>(tokens->as_array()->size());
    for (const auto& [key, value] : src.metadata()) {
      if (key.rfind("tokenizer.", 0) == 0) tokenizer_kv.emplace_back(key, value);
    }
  } else if (std::string_view(p->arch) == "bert") {
    // A WordPiece vocabulary: the built-in pieces ("▁"-marked word starts, bare
    // continuations, as llama.cpp's converter writes bert vocabularies) with bert's
    // specials in front.
    BuiltinVocab v = builtin_vocab(n_vocab);
    const char* specials[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    for (int32_t i = 0; i < 5; ++i) {
      v.tokens[static_cast<size_t>(i)] = specials[i];
      v.token_types[static_cast<size_t>(i)] = 3;
    }
    tokenizer_kv.emplace_back("tokenizer.ggml.model", gguf::Value::str("bert"));
    tokenizer_kv.emplace_back("tokenizer.ggml.tokens", gguf::Value::string_array(v.tokens));
    tokenizer_kv.emplace_back("tokenizer.ggml.token_type", gguf::Value::i32_array(v.token_types));
    tokenizer_kv.emplace_back("tokenizer.ggml.token_type_count", gguf::Value::u32(2));
    tokenizer_kv.emplace_back("tokenizer.ggml.padding_token_id", gguf::Value::u32(0));
    tokenizer_kv.emplace_back("tokenizer.ggml.unknown_token_id", gguf::Value::u32(1));
    tokenizer_kv.emplace_back("tokenizer.ggml.cls_token_id", gguf::Value::u32(2));
    tokenizer_kv.emplace_back("tokenizer.ggml.seperator_token_id", gguf::Value::u32(3));
    tokenizer_kv.emplace_back("tokenizer.ggml.mask_token_id", gguf::Value::u32(4));
  } else {
    BuiltinVocab v = builtin_vocab(n_vocab);
    tokenizer_kv.emplace_back("tokenizer.ggml.model", gguf::Value::str("llama"));
    tokenizer_kv.emplace_back("tokenizer.ggml.tokens", gguf::Value::string_array(v.tokens));
    tokenizer_kv.emplace_back("tokenizer.ggml.scores", gguf::Value::f32_array(v.scores));
    tokenizer_kv.emplace_back("tokenizer.ggml.token_type", gguf::Value::i32_array(v.token_types));
    tokenizer_kv.emplace_back("tokenizer.ggml.bos_token_id", gguf::Value::u32(1));
    tokenizer_kv.emplace_back("tokenizer.ggml.eos_token_id", gguf::Value::u32(2));
    tokenizer_kv.emplace_back("tokenizer.ggml.unknown_token_id", gguf::Value::u32(0));
    tokenizer_kv.emplace_back("tokenizer.ggml.add_bos_token", gguf::Value::boolean(true));
    tokenizer_kv.emplace_back("tokenizer.ggml.add_eos_token", gguf::Value::boolean(false));
  }

  write_hparams(writer, *p, n_vocab, opts.ctx.value_or(p->n_ctx));
  for (auto& [key, value] : tokenizer_kv) writer.set(key, std::move(value));

  const std::vector<PlannedTensor> plan =
      plan_tensors(*p, n_vocab, *w, opts.ctx.value_or(p->n_ctx));
  for (const auto& t : plan) {
    HEARTH_RETURN_IF_ERROR(writer.add_tensor_spec(t.name, t.dims, t.type));
  }
  uint64_t total = 0, written = 0;
  for (const auto& t : plan) total += tensor_bytes(t);
  if (opts.progress) opts.progress(0, total);
  return writer.write_file_streaming(opts.out, [&](size_t index, std::span<uint8_t> dst) -> Status {
    const PlannedTensor& t = plan[index];
    if (dst.size() != tensor_bytes(t)) return Internal("tensor '" + t.name + "' size mismatch");
    HEARTH_RETURN_IF_ERROR(fill_tensor(t, index, opts.seed, opts.stddev, opts.threads, dst));
    written += dst.size();
    if (opts.progress) opts.progress(written, total);
    return OkStatus();
  });
}

}  // namespace hearth::cli
