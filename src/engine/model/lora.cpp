#include "engine/model/lora.h"

#include <map>

namespace hearth {
namespace kb = engine::kb;

namespace {

using engine::LoraPair;
using engine::LoraTarget;

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string dims_string(const std::vector<uint64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// Where a base tensor name sits in the forward pass: a layer and a target, or -1 for
// token_embd / output (target then unused). Anything else cannot carry an adapter.
struct Site {
  int32_t layer = -1;
  LoraTarget target = LoraTarget::kQ;
  bool embd = false, output = false;
};

Result<Site> site_of(const std::string& name, const engine::Hparams& hp) {
  Site s;
  if (name == "token_embd.weight") {
    s.embd = true;
    return s;
  }
  if (name == "output.weight") {
    s.output = true;
    return s;
  }
  static const std::pair<const char*, LoraTarget> kTargets[] = {
      {"attn_q.weight", LoraTarget::kQ},      {"attn_k.weight", LoraTarget::kK},
      {"attn_v.weight", LoraTarget::kV},      {"attn_output.weight", LoraTarget::kO},
      {"ffn_gate.weight", LoraTarget::kGate}, {"ffn_up.weight", LoraTarget::kUp},
      {"ffn_down.weight", LoraTarget::kDown},
  };
  const std::string why = "LoRA tensors of " + name +
                          ": hearth adapts token_embd, output and the blocks' attn_q, attn_k, "
                          "attn_v, attn_output, ffn_gate, ffn_up and ffn_down only";
  if (name.rfind("blk.", 0) != 0) return Unsupported(why);
  const size_t dot = name.find('.', 4);
  if (dot == std::string::npos) return Unsupported(why);
  int32_t layer = 0;
  for (size_t i = 4; i < dot; ++i) {
    if (name[i] < '0' || name[i] > '9' || layer > 100000) return Unsupported(why);
    layer = layer * 10 + (name[i] - '0');
  }
  if (dot == 4 || layer >= hp.n_layer) return Unsupported(why);
  const std::string rest = name.substr(dot + 1);
  for (const auto& [suffix, target] : kTargets) {
    if (rest == suffix) {
      if (target == LoraTarget::kUp && hp.fused_gate_up)
        return Unsupported(name + " holds the gate and up rows fused: hearth cannot adapt it");
      s.layer = layer;
      s.target = target;
      return s;
    }
  }
  return Unsupported(why);
}

Status load_factor(const gguf::TensorInfo& t, kb::WeightView& view, std::vector<float>& data) {
  using T = gguf::TensorType;
  if (t.type != T::kF32 && t.type != T::kF16 && t.type != T::kBF16 && t.type != T::kQ8_0)
    return Unsupported("LoRA tensor " + t.name + " has type " + gguf::tensor_type_name(t.type) +
                       " (supported: F32, F16, BF16, Q8_0)");
  if (t.dims.size() != 2 || t.dims[0] == 0 || t.dims[1] == 0)
    return InvalidArgument("LoRA tensor " + t.name + " has shape " + dims_string(t.dims) +
                           ", expected a 2-D matrix");
  const gguf::TypeTraits* tr = gguf::type_traits(t.type);
  if (t.dims[0] % tr->block_size != 0)
    return InvalidArgument("LoRA tensor " + t.name + " has " + std::to_string(t.dims[0]) +
                           " columns, not a multiple of " + gguf::tensor_type_name(t.type) +
                           "'s block of " + std::to_string(tr->block_size));
  const int64_t rows = static_cast<int64_t>(t.dims[1]), cols = static_cast<int64_t>(t.dims[0]);
  const uint64_t rb = gguf::row_bytes(t.type, t.dims[0]);
  data.resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    kb::dequantize_row(t.type, t.data + static_cast<size_t>(r) * rb, data.data() + r * cols, cols);
  view.type = T::kF32;
  view.rows = rows;
  view.cols = cols;
  view.data = reinterpret_cast<const uint8_t*>(data.data());
  return OkStatus();
}

}  // namespace

Result<std::shared_ptr<const LoraAdapter>> LoraAdapter::load(const std::string& path,
                                                             const gguf::GgufFile& base,
                                                             const engine::Hparams& hp,
                                                             const void* owner) {
  HEARTH_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::open(path));
  auto where = [&] { return "LoRA adapter " + path + ": "; };
  auto type = file.get_string("general.type");
  if (!type.ok() || *type != "adapter")
    return InvalidArgument(where() + "general.type must be \"adapter\", got " +
                           (type.ok() ? "\"" + *type + "\"" : std::string("none")));
  auto adapter_type = file.get_string("adapter.type");
  if (!adapter_type.ok() || *adapter_type != "lora")
    return InvalidArgument(where() + "adapter.type must be \"lora\", got " +
                           (adapter_type.ok() ? "\"" + *adapter_type + "\"" : std::string("none")));
  const std::string arch = file.architecture();
  if (arch != hp.arch)
    return InvalidArgument(where() + "general.architecture is \"" + arch +
                           "\" but the base model's is \"" + hp.arch + "\"");
  auto adapter = std::make_shared<LoraAdapter>();
  HEARTH_ASSIGN_OR_RETURN(adapter->alpha_, file.get_f32_or("adapter.lora.alpha", 0.0f));
  adapter->owner_ = owner;
  adapter->layers_.resize(static_cast<size_t>(hp.n_layer));

  // Pair .lora_a with .lora_b by base name (llama.cpp skips *_norm.weight tensors; so
  // does hearth).
  std::map<std::string, std::pair<const gguf::TensorInfo*, const gguf::TensorInfo*>> pairs;
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (ends_with(t.name, ".lora_a")) {
      pairs[t.name.substr(0, t.name.size() - 7)].first = &t;
    } else if (ends_with(t.name, ".lora_b")) {
      pairs[t.name.substr(0, t.name.size() - 7)].second = &t;
    } else if (!ends_with(t.name, "_norm.weight")) {
      return InvalidArgument(where() + "tensor " + t.name +
                             " is neither a .lora_a nor a .lora_b tensor");
    }
  }
  if (pairs.empty()) return InvalidArgument(where() + "holds no .lora_a / .lora_b tensors");
  for (const auto& [name, ab] : pairs) {
    const auto [a, b] = ab;
    if (a == nullptr || b == nullptr)
      return InvalidArgument(where() + "tensor " + name + (a ? ".lora_b" : ".lora_a") +
                             " is missing (the pair for " + name + " is incomplete)");
    const gguf::TensorInfo* w = base.tensor(name);
    if (w == nullptr)
      return InvalidArgument(where() + "tensor " + a->name + " adapts " + name +
                             ", which the base model does not have");
    HEARTH_ASSIGN_OR_RETURN(const Site site, site_of(name, hp));
    auto pair = std::make_unique<LoraPair>();
    HEARTH_RETURN_IF_ERROR(load_factor(*a, pair->a, pair->a_data));
    HEARTH_RETURN_IF_ERROR(load_factor(*b, pair->b, pair->b_data));
    // Clang 14 (Debian 12) cannot capture structured bindings: capture plain copies.
    const auto bad_shape = [&, a = a, b = b, name = name] {
      return InvalidArgument(where() + "tensors " + a->name + " " + dims_string(a->dims) + " and " +
                             b->name + " " + dims_string(b->dims) + " do not fit " + name + " " +
                             dims_string(w->dims));
    };
    if (w->dims.size() != 2) return bad_shape();
    if (site.embd) {  // A: a row of `rank` per token; B: n_embd rows of `rank`
      if (a->dims[1] != w->dims[1] || b->dims[1] != w->dims[0] || a->dims[0] != b->dims[0])
        return bad_shape();
    } else {  // A: rank rows of n_in; B: n_out rows of rank
      if (a->dims[0] != w->dims[0] || b->dims[1] != w->dims[1] || a->dims[1] != b->dims[0])
        return bad_shape();
    }
    pair->rank = static_cast<int64_t>(b->dims[0]);
    if (site.embd) {
      adapter->token_embd_ = std::move(pair);
    } else if (site.output) {
      adapter->output_ = std::move(pair);
    } else {
      adapter->layers_[static_cast<size_t>(site.layer)][static_cast<size_t>(site.target)] =
          std::move(pair);
    }
    ++adapter->n_pairs_;
  }
  return std::shared_ptr<const LoraAdapter>(std::move(adapter));
}

}  // namespace hearth
