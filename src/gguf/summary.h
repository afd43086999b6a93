// A model-at-a-glance view of a GgufFile: what `hearth inspect` prints.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hearth/gguf/gguf.h"

namespace hearth::gguf {

struct ModelSummary {
  uint32_t version = 0;
  uint64_t file_size = 0;
  uint64_t alignment = 0;
  std::string architecture;           // "" when absent
  std::optional<std::string> name;    // general.name
  std::optional<uint32_t> file_type;  // general.file_type (llama_ftype)
  // "<arch>.<suffix>" keys present in the file, in kHyperparameterSuffixes order,
  // keyed by suffix ("context_length", "attention.head_count", ...).
  std::vector<std::pair<std::string, Value>> hyperparameters;
  std::optional<std::string> tokenizer_model;  // tokenizer.ggml.model
  std::optional<std::string> tokenizer_pre;    // tokenizer.ggml.pre
  std::optional<uint64_t> vocab_size;          // tokens array length, else <arch>.vocab_size
  std::optional<uint64_t> bos_id, eos_id;
  uint64_t metadata_count = 0;
  uint64_t tensor_count = 0;
  uint64_t tensor_bytes = 0;
  std::map<std::string, uint64_t> tensors_by_type;  // ggml type name -> count
};

// The suffixes, after "<arch>.", that a summary reports when present.
extern const char* const kHyperparameterSuffixes[];
extern const size_t kHyperparameterSuffixCount;

ModelSummary summarize(const GgufFile& f);

// llama_ftype name ("MOSTLY_Q4_K_M"), or "unknown" for an id hearth does not know.
const char* file_type_name(uint32_t ftype);

}  // namespace hearth::gguf
