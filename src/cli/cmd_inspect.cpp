// `hearth inspect FILE [--json] [--sha256]`: what a GGUF file holds, at a glance.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/registry.h"
#include "common/json_text.h"
#include "gguf/summary.h"
#include "hearth/gguf/gguf.h"
#include "hearth/sha256.h"

namespace hearth::cli {
namespace {

using gguf::Value;
using gguf::ValueType;

// Shortest decimal that reads back as the same float (f32) or double (f64), so that
// 1e-5f prints as 1e-05 rather than 9.999999747378752e-06.
double shortest(const Value& v) {
  const double d = *v.as_f64();
  if (v.type != ValueType::kFloat32) return d;
  const float f = static_cast<float>(d);
  char buf[64];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, d);
    const double back = std::strtod(buf, nullptr);
    if (static_cast<float>(back) == f) return back;
  }
  return d;
}

nlohmann::json value_json(const Value& v) {
  switch (v.type) {
    case ValueType::kString:
      return std::string(*v.as_string());
    case ValueType::kBool:
      return *v.as_bool();
    case ValueType::kFloat32:
    case ValueType::kFloat64:
      return shortest(v);
    case ValueType::kArray: {
      nlohmann::json arr = nlohmann::json::array();
      for (const Value& e : *v.as_array()) arr.push_back(value_json(e));
      return arr;
    }
    default:
      if (auto u = v.as_u64(); u.ok()) return *u;
      return *v.as_i64();
  }
}

std::string value_text(const Value& v) {
  if (v.type == ValueType::kFloat32 || v.type == ValueType::kFloat64) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.10g", shortest(v));
    return buf;
  }
  if (v.type == ValueType::kString) return std::string(*v.as_string());
  return json_text(value_json(v));
}

struct Options {
  std::string path;
  bool json = false;
  bool sha256 = false;
};

int run(const Options& o) {
  auto f = gguf::GgufFile::open(o.path);
  if (!f.ok()) {
    std::fprintf(stderr, "hearth inspect: %s\n", f.status().to_string().c_str());
    return 1;
  }
  const gguf::ModelSummary s = gguf::summarize(*f);
  std::string digest;
  if (o.sha256) {
    auto d = sha256_file(o.path);
    if (!d.ok()) {
      std::fprintf(stderr, "hearth inspect: %s\n", d.status().to_string().c_str());
      return 1;
    }
    digest = to_hex(*d);
  }
  if (o.json) {
    nlohmann::json j;
    j["file"] = o.path;
    j["file_size"] = s.file_size;
    j["gguf_version"] = s.version;
    j["alignment"] = s.alignment;
    j["architecture"] = s.architecture;
    j["name"] = s.name ? nlohmann::json(*s.name) : nlohmann::json();
    j["file_type"] = s.file_type ? nlohmann::json(*s.file_type) : nlohmann::json();
    j["file_type_name"] =
        s.file_type ? nlohmann::json(gguf::file_type_name(*s.file_type)) : nlohmann::json();
    nlohmann::json hp = nlohmann::json::object();
    for (const auto& [suffix, v] : s.hyperparameters) hp[suffix] = value_json(v);
    j["hyperparameters"] = hp;
    nlohmann::json tok = nlohmann::json::object();
    tok["model"] = s.tokenizer_model ? nlohmann::json(*s.tokenizer_model) : nlohmann::json();
    tok["pre"] = s.tokenizer_pre ? nlohmann::json(*s.tokenizer_pre) : nlohmann::json();
    tok["vocab_size"] = s.vocab_size ? nlohmann::json(*s.vocab_size) : nlohmann::json();
    tok["bos_token_id"] = s.bos_id ? nlohmann::json(*s.bos_id) : nlohmann::json();
    tok["eos_token_id"] = s.eos_id ? nlohmann::json(*s.eos_id) : nlohmann::json();
    j["tokenizer"] = tok;
    j["metadata_count"] = s.metadata_count;
    j["tensor_count"] = s.tensor_count;
    j["tensor_bytes"] = s.tensor_bytes;
    j["tensor_types"] = s.tensors_by_type;
    if (o.sha256) j["sha256"] = digest;
    std::printf("%s\n", json_text(j, 2).c_str());
    return 0;
  }
  std::printf("file:          %s\n", o.path.c_str());
  std::printf("file size:     %" PRIu64 " bytes\n", s.file_size);
  std::printf("gguf version:  %u\n", s.version);
  std::printf("alignment:     %" PRIu64 "\n", s.alignment);
  std::printf("architecture:  %s\n", s.architecture.empty() ? "(none)" : s.architecture.c_str());
  std::printf("name:          %s\n", s.name ? s.name->c_str() : "(none)");
  if (s.file_type) {
    std::printf("file type:     %u (%s)\n", *s.file_type, gguf::file_type_name(*s.file_type));
  } else {
    std::printf("file type:     (none)\n");
  }
  std::printf("hyperparameters:\n");
  for (const auto& [suffix, v] : s.hyperparameters) {
    std::printf("  %-34s %s\n", (suffix + ":").c_str(), value_text(v).c_str());
  }
  std::printf("tokenizer:\n");
  std::printf("  model:      %s\n", s.tokenizer_model ? s.tokenizer_model->c_str() : "(none)");
  if (s.tokenizer_pre) std::printf("  pre:        %s\n", s.tokenizer_pre->c_str());
  auto opt = [](const std::optional<uint64_t>& v) {
    return v ? std::to_string(*v) : std::string("(none)");
  };
  std::printf("  vocab size: %s\n", opt(s.vocab_size).c_str());
  std::printf("  bos id:     %s\n", opt(s.bos_id).c_str());
  std::printf("  eos id:     %s\n", opt(s.eos_id).c_str());
  std::printf("metadata keys: %" PRIu64 "\n", s.metadata_count);
  std::printf("tensors:       %" PRIu64 " (%" PRIu64 " bytes of tensor data)\n", s.tensor_count,
              s.tensor_bytes);
  for (const auto& [type, n] : s.tensors_by_type) {
    std::printf("  %-8s %" PRIu64 "\n", (type + ":").c_str(), n);
  }
  if (o.sha256) std::printf("sha256:        %s\n", digest.c_str());
  return 0;
}

Registrar reg("inspect", [](CLI::App& root) {
  auto opts = std::make_shared<Options>();
  auto* cmd = root.add_subcommand("inspect", "Show what a GGUF model file holds");
  cmd->add_option("file", opts->path, "GGUF file")->required();
  cmd->add_flag("--json", opts->json, "Print JSON instead of text");
  cmd->add_flag("--sha256", opts->sha256, "Also print the file's SHA-256");
  cmd->callback([opts] { exit_code() = run(*opts); });
});

}  // namespace
}  // namespace hearth::cli
