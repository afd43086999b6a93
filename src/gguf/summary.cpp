// ModelSummary: the keys `hearth inspect` reports, gathered from a GgufFile.
#include "gguf/summary.h"

namespace hearth::gguf {

const char* const kHyperparameterSuffixes[] = {
    "context_length",
    "embedding_length",
    "block_count",
    "feed_forward_length",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.key_length",
    "attention.value_length",
    "rope.freq_base",
    "rope.dimension_count",
    "attention.layer_norm_rms_epsilon",
    "attention.layer_norm_epsilon",
    "vocab_size",
};
const size_t kHyperparameterSuffixCount = std::size(kHyperparameterSuffixes);

const char* file_type_name(uint32_t ftype) {
  switch (ftype) {
    case 0: return "ALL_F32";
    case 1: return "MOSTLY_F16";
    case 2: return "MOSTLY_Q4_0";
    case 3: return "MOSTLY_Q4_1";
    case 7: return "MOSTLY_Q8_0";
    case 8: return "MOSTLY_Q5_0";
    case 9: return "MOSTLY_Q5_1";
    case 10: return "MOSTLY_Q2_K";
    case 11: return "MOSTLY_Q3_K_S";
    case 12: return "MOSTLY_Q3_K_M";
    case 13: return "MOSTLY_Q3_K_L";
    case 14: return "MOSTLY_Q4_K_S";
    case 15: return "MOSTLY_Q4_K_M";
    case 16: return "MOSTLY_Q5_K_S";
    case 17: return "MOSTLY_Q5_K_M";
    case 18: return "MOSTLY_Q6_K";
    case 19: return "MOSTLY_IQ2_XXS";
    case 20: return "MOSTLY_IQ2_XS";
    case 21: return "MOSTLY_Q2_K_S";
    case 22: return "MOSTLY_IQ3_XS";
    case 23: return "MOSTLY_IQ3_XXS";
    case 24: return "MOSTLY_IQ1_S";
    case 25: return "MOSTLY_IQ4_NL";
    case 26: return "MOSTLY_IQ3_S";
    case 27: return "MOSTLY_IQ3_M";
    case 28: return "MOSTLY_IQ2_S";
    case 29: return "MOSTLY_IQ2_M";
    case 30: return "MOSTLY_IQ4_XS";
    case 31: return "MOSTLY_IQ1_M";
    case 32: return "MOSTLY_BF16";
    case 36: return "MOSTLY_TQ1_0";
    case 37: return "MOSTLY_TQ2_0";
    default: return "unknown";
  }
}

ModelSummary summarize(const GgufFile& f) {
  ModelSummary s;
  s.version = f.version();
  s.file_size = f.file_size();
  s.alignment = f.alignment();
  s.architecture = f.architecture();
  s.metadata_count = f.metadata().size();
  if (auto n = f.get_string("general.name"); n.ok()) s.name = *n;
  if (auto t = f.get_u32("general.file_type"); t.ok()) s.file_type = *t;
  if (!s.architecture.empty()) {
    for (size_t i = 0; i < kHyperparameterSuffixCount; ++i) {
      const std::string suffix = kHyperparameterSuffixes[i];
      if (const Value* v = f.find(s.architecture + "." + suffix)) {
        s.hyperparameters.emplace_back(suffix, *v);
      }
    }
  }
  if (auto m = f.get_string("tokenizer.ggml.model"); m.ok()) s.tokenizer_model = *m;
  if (auto p = f.get_string("tokenizer.ggml.pre"); p.ok()) s.tokenizer_pre = *p;
  if (const Value* tokens = f.find("tokenizer.ggml.tokens"); tokens && tokens->as_array()) {
    s.vocab_size = tokens->as_array()->size();
  } else if (!s.architecture.empty()) {
    if (auto v = f.get_u64(s.architecture + ".vocab_size"); v.ok()) s.vocab_size = *v;
  }
  if (auto b = f.get_u64("tokenizer.ggml.bos_token_id"); b.ok()) s.bos_id = *b;
  if (auto e = f.get_u64("tokenizer.ggml.eos_token_id"); e.ok()) s.eos_id = *e;
  s.tensor_count = f.tensors().size();
  for (const auto& t : f.tensors()) {
    s.tensor_bytes += t.n_bytes;
    ++s.tensors_by_type[tensor_type_name(t.type)];
  }
  return s;
}

}  // namespace hearth::gguf
