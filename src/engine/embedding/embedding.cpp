#include "hearth/engine/embedding.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace hearth {

std::string_view pooling_name(Pooling p) {
  switch (p) {
    case Pooling::kNone:
      return "none";
    case Pooling::kMean:
      return "mean";
    case Pooling::kCls:
      return "cls";
    case Pooling::kLast:
      return "last";
  }
  return "mean";
}

std::optional<Pooling> pooling_from_name(std::string_view name) {
  for (Pooling p : {Pooling::kNone, Pooling::kMean, Pooling::kCls, Pooling::kLast}) {
    if (pooling_name(p) == name) return p;
  }
  return std::nullopt;
}

std::optional<Pooling> pooling_from_gguf(int64_t value) {
  if (value < 0 || value > 3) return std::nullopt;
  return static_cast<Pooling>(value);
}

Status normalize_embedding(std::span<float> v, int32_t p) {
  if (p < -1) {
    return InvalidArgument("embd_normalize " + std::to_string(p) +
                           " is not a normalisation (-1 none, 0 max-abs, 1 taxicab, 2 euclidean, "
                           ">2 p-norm)");
  }
  double sum = 0.0;
  if (p == -1) {
    sum = 1.0;
  } else if (p == 0) {
    for (float x : v) sum = std::max(sum, static_cast<double>(std::abs(x)));
    sum /= 32760.0;
  } else if (p == 2) {
    for (float x : v) sum += x * x;  // the product in float, as llama.cpp
    sum = std::sqrt(sum);
  } else {
    for (float x : v) sum += std::pow(std::abs(static_cast<double>(x)), p);
    sum = std::pow(sum, 1.0 / p);
  }
  const float scale = sum > 0.0 ? static_cast<float>(1.0 / sum) : 0.0f;
  for (float& x : v) x *= scale;
  return OkStatus();
}

}  // namespace hearth
