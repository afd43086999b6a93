// The settings of one model as `hearth serve` users write them: the keys of a TOML
// [[models]] table and of a POST /hearth/models body, applied to the runtime's own
// ModelConfig. One parser for both, so a key means the same everywhere and an unknown
// key or a value out of range is an error that names it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "hearth/runtime/runtime.h"
#include "hearth/status.h"

namespace hearth::server {

// A setting's value as the document gave it: an integer, a string, a boolean, or
// anything else (monostate: a float, array or object, always a type error).
using ModelSettingValue = std::variant<std::monostate, int64_t, std::string, bool>;

// A ModelConfig with the server's defaults: 4 sequences (continuous batching), the
// tier left to the server's default (its most durable enabled tier).
runtime::ModelConfig default_model_config();

// Applies one setting: "id", "path", "tier" ("ram", "ram_file", "disk") are strings;
// "kv_type" ("f16", "q8_0", "q4_0") is a string; "context" (0 = the model's own,
// bounded by the KV budget) and "n_seq_max" are integers; "kv_budget" is a size
// (bytes as an integer, or a string like "6GiB"; 0 = the default); "threads" (0 = the
// cores divided among the models), "n_batch", "prefill_chunk" (-1 = unlimited, 0 = the
// default), "max_restarts", "restart_backoff_ms" are integers; "batch_strategy"
// ("decode_first", "prefill_first", "balanced"), "fingerprint_mode" ("safe",
// "gguf_chunked", "fast_unsafe") and "fingerprint" (64 hex digits) are strings;
// "policy.<field>" sets a save-policy field (runtime::set_save_policy_field);
// "swa_full" (a boolean) keeps every position in sliding-window layers instead of a ring
// (ModelConfig::swa_full); "weights" ("copy": into huge pages at load, the default;
// "mapped": read in place from the file mapping; ModelConfig::weights_in_place).
// Speculative decoding: "draft_model" (a GGUF path), "speculative" ("none", "draft",
// "ngram": the requests' default), "draft_max" (1..256), "draft_min" (0..256),
// "ngram_max" (1..8), "draft_adaptive" (a boolean) and "draft_probe_interval" (0..4096)
// are runtime::SpeculativeConfig's fields (adaptive, probe_interval).
// Devices (docs/gpu.md): "device" ("cpu", "cuda", "cuda:N": hearth::parse_device) and
// "n_gpu_layers" (-1 = every layer, or a count; > 0 needs a GPU device, checked by
// finish_model_config), and the draft model's "draft_device" / "draft_n_gpu_layers"
// (default: the target's).
// InvalidArgument names the key.
// "chat_template_file" (a path) reads a Jinja chat template that replaces the GGUF's
// tokenizer.chat_template for this model (ModelConfig::chat_template); a file that cannot
// be read or does not parse is an error naming the file, the line and the column.
Status apply_model_setting(runtime::ModelConfig& config, std::string_view key,
                           const ModelSettingValue& value);

// `--chat-template VALUE` names a file (a path holding '/', or ending in ".jinja") rather
// than a built-in family.
bool names_a_template_file(std::string_view value);
// The template text of a chat template file, checked to parse (errors name the file).
Result<std::string> read_chat_template_file(const std::string& path);

// A size: decimal digits (bytes) or a number with a unit, "512MiB", "2GB", "1.5 GiB",
// "64k" (k/m/g/t are powers of 1000, kib/mib/gib/tib of 1024; case-insensitive).
// nullopt for anything else, a negative value, or one no int64 holds.
std::optional<int64_t> parse_size_text(std::string_view text);

// An adapter as `--lora FILE[:SCALE]` writes it: the text after the last ':' is the
// scale when it parses as a finite number (default 1), else part of the path.
Result<runtime::AdapterSpec> parse_adapter_arg(std::string_view text);
// One entry of a model's `lora` list (TOML [[models]] lora = [{path, scale}], POST
// /hearth/models): a path and an optional finite scale. InvalidArgument names `field`.
Status check_adapter_entry(const runtime::AdapterSpec& spec, const std::string& field);

// n_gpu_layers against device, and the draft's pair (a draft_device without its own
// count puts every draft layer on it; without a draft_device the draft follows the
// target): a count > 0 needs a GPU device. InvalidArgument names the layers key.
Status check_layers_fit_device(const runtime::ModelConfig& config);

// Checks what a model needs after its settings: a path; a fingerprint for fast_unsafe;
// n_batch >= n_seq_max; check_layers_fit_device; an id made from the file's name when none was
// given.
Status finish_model_config(runtime::ModelConfig& config);

}  // namespace hearth::server
