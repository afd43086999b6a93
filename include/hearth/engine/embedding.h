// Embedding vocabulary shared by the engine, the runtime and the server: how a
// sequence's hidden states become one vector (pooling) and how a vector is scaled
// (normalisation), as llama.cpp defines both.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "hearth/status.h"

namespace hearth {

// llama.cpp's llama_pooling_type numbering (the GGUF key <arch>.pooling_type); rank (4)
// needs a classifier head and is not implemented.
enum class Pooling : int32_t {
  kNone = 0,  // one vector per token
  kMean = 1,  // the mean of the sequence's token vectors
  kCls = 2,   // the first token's vector ([CLS] for bert)
  kLast = 3,  // the last token's vector (decoder embedding models)
};

// "none", "mean", "cls", "last".
std::string_view pooling_name(Pooling p);
// The inverse of pooling_name; nullopt for any other text.
std::optional<Pooling> pooling_from_name(std::string_view name);
// The GGUF value (0..3) as a Pooling; nullopt for anything else (rank, unknown).
std::optional<Pooling> pooling_from_gguf(int64_t value);

// llama-server's embd_normalize (common_embd_normalize), in place: -1 none; 0 divides
// by max|x| / 32760 (an int16 range); 2 the Euclidean norm (the default); any other
// p >= 1 the p-norm (1: taxicab). Sums in double. A zero vector stays zero.
// InvalidArgument (naming embd_normalize) for p < -1.
Status normalize_embedding(std::span<float> v, int32_t p);

}  // namespace hearth
