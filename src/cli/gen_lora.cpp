#include "cli/gen_lora.h"

#include <cstring>

#include "cli/gen_model_rng.h"
#include "hearth/engine/fp16.h"
#include "hearth/gguf/gguf.h"

namespace hearth::cli {

namespace {

bool adapted(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return false;
  const size_t dot = name.find('.', 4);
  if (dot == std::string::npos) return false;
  const std::string rest = name.substr(dot + 1);
  for (const char* t :
       {"attn_q.weight", "attn_v.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"})
    if (rest == t) return true;
  return false;
}

std::vector<uint8_t> random_bytes(uint64_t seed, uint64_t index, size_t n, double stddev,
                                  gguf::TensorType type) {
  std::vector<float> v(n);
  NormalGenerator gen(stream_seed(seed, index, 0));
  gen.fill(v.data(), n, stddev);
  std::vector<uint8_t> out;
  if (type == gguf::TensorType::kF32) {
    out.resize(n * sizeof(float));
    std::memcpy(out.data(), v.data(), out.size());
  } else {
    out.resize(n * sizeof(uint16_t));
    for (size_t i = 0; i < n; ++i) {
      const uint16_t h = fp32_to_fp16(v[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

}  // namespace

Status generate_lora(const GenLoraOptions& o) {
  if (o.rank == 0) return InvalidArgument("--rank must be positive");
  if (o.type != "f32" && o.type != "f16")
    return InvalidArgument("--type for an adapter must be f32 or f16, got " + o.type);
  const gguf::TensorType type = o.type == "f32" ? gguf::TensorType::kF32 : gguf::TensorType::kF16;
  HEARTH_ASSIGN_OR_RETURN(gguf::GgufFile base, gguf::GgufFile::open(o.base));
  const std::string arch = base.architecture();
  if (arch.empty()) return InvalidArgument("--lora-for " + o.base + ": no general.architecture");
  gguf::GgufWriter w;
  w.set_string("general.architecture", arch);
  w.set_string("general.type", "adapter");
  w.set_string("general.name", "hearth random LoRA (seed " + std::to_string(o.seed) + ")");
  w.set_string("adapter.type", "lora");
  w.set_f32("adapter.lora.alpha", o.alpha);
  uint64_t index = 0;
  for (const gguf::TensorInfo& t : base.tensors()) {
    if (!adapted(t.name) || t.dims.size() != 2) continue;
    const uint64_t n_in = t.dims[0], n_out = t.dims[1], r = o.rank;
    HEARTH_RETURN_IF_ERROR(w.add_tensor(t.name + ".lora_a", {n_in, r}, type,
                                        random_bytes(o.seed, index++, n_in * r, o.stddev, type)));
    HEARTH_RETURN_IF_ERROR(w.add_tensor(t.name + ".lora_b", {r, n_out}, type,
                                        random_bytes(o.seed, index++, r * n_out, o.stddev, type)));
  }
  if (index == 0)
    return InvalidArgument("--lora-for " + o.base +
                           ": the base has no attn_q / attn_v / ffn_gate / ffn_up / ffn_down "
                           "matrices to adapt");
  return w.write_file(o.out);
}

}  // namespace hearth::cli
