// The shared chat-template fixtures (../shared/templates): the conversations, the
// bos/eos tokens render.py hands each template, and a render of one case the way
// render.py (transformers' apply_chat_template) calls a template.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hearth/jinja/template.h"

namespace hearth::jinja::testing {

// The outcome of rendering one case: text, or the error.
struct Outcome {
  bool ok = false;
  std::string text;  // the render, or the error message
};

inline std::string templates_dir() {
  return std::string(HEARTH_SHARED_DIR) + "/templates";
}

inline std::vector<std::string> template_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(templates_dir(), ec)) {
    if (e.path().extension() == ".jinja") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline nlohmann::ordered_json conversations() {
  return nlohmann::ordered_json::parse(read_file(templates_dir() + "/conversations.json"));
}

// render.py's SPECIAL_TOKENS: the bos/eos tokens of each template's model family.
inline std::pair<std::string, std::string> special_tokens(const std::string& name) {
  static const std::pair<std::string, std::string> kLlama3{"<|begin_of_text|>", "<|eot_id|>"};
  static const std::pair<std::string, std::string> kLlama2{"<s>", "</s>"};
  static const std::pair<std::string, std::string> kChatml{"", "<|im_end|>"};
  static const std::pair<std::string, std::string> kDeepseek{
      "<\xEF\xBD\x9C"
      "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
      "<\xEF\xBD\x9C"
      "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"};
  static const std::pair<std::string, std::string> kGemma{"<bos>", "<eos>"};
  static const std::map<std::string, std::pair<std::string, std::string>> kTable = {
      {"vllm-hermes", {"<|begin_of_text|>", "<|im_end|>"}},
      {"vllm-llama3.1-json", kLlama3},
      {"vllm-llama3.2", kLlama3},
      {"vllm-phi4-mini", {"<|endoftext|>", "<|endoftext|>"}},
      {"vllm-deepseekr1", kDeepseek},
      {"vllm-granite", {"<|end_of_text|>", "<|end_of_text|>"}},
      {"vllm-gemma3-pythonic", kGemma},
      {"vllm-internlm2-tool", kLlama2},
      {"vllm-chatml", kChatml},
      {"vllm-alpaca", kLlama2},
      {"vllm-vicuna", kLlama2},
      {"vllm-falcon", {"", "<|endoftext|>"}},
      {"llamacpp-deepseek-r1-distill-qwen", kDeepseek},
      {"llamacpp-mistral-small-3.1", kLlama2},
      {"llamacpp-command-r7b-tool-use", {"<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"}},
      {"llamacpp-kimi-k2", {"[BOS]", "[EOS]"}},
      {"llamacpp-glm-4.6", {"", "<|endoftext|>"}},
      {"llamacpp-lfm2", {"<|startoftext|>", "<|im_end|>"}},
      {"llamacpp-qwen2.5-instruct", kChatml},
      {"llamacpp-qwen3", kChatml},
      {"llamacpp-llama-3.1-instruct", kLlama3},
      {"llamacpp-gemma-2-it", kGemma},
      {"llamacpp-phi-3.5-mini", {"<s>", "<|endoftext|>"}},
      {"llamacpp-smollm3", kChatml},
      {"ollama-qwen38", kChatml},
  };
  auto it = kTable.find(name);
  return it == kTable.end() ? std::pair<std::string, std::string>{"", ""} : it->second;
}

// Renders every case with the template file `dir`/`name`.jinja.
inline std::vector<std::pair<std::string, Outcome>> render_all_at(
    const std::string& dir, const std::string& name, const nlohmann::ordered_json& cases) {
  std::vector<std::pair<std::string, Outcome>> out;
  const std::string source = read_file(dir + "/" + name + ".jinja");
  auto tmpl = Template::parse(source);
  const auto [bos, eos] = special_tokens(name);
  RenderOptions opts;
  opts.fixed_now = true;
  opts.now.tm_year = 2024 - 1900;
  opts.now.tm_mon = 6;
  opts.now.tm_mday = 26;
  opts.now.tm_wday = 5;  // a Friday
  opts.now.tm_yday = 207;
  for (const auto& c : cases) {
    Outcome o;
    if (!tmpl.ok()) {
      o.text = tmpl.status().message();
    } else {
      nlohmann::ordered_json ctx;
      ctx["messages"] = c.at("messages");
      ctx["tools"] = c.contains("tools") ? c["tools"] : nlohmann::ordered_json();
      ctx["documents"] = nullptr;
      ctx["add_generation_prompt"] = c.value("add_generation_prompt", false);
      ctx["bos_token"] = bos;
      ctx["eos_token"] = eos;
      if (c.contains("extra")) {
        for (auto it = c["extra"].begin(); it != c["extra"].end(); ++it) ctx[it.key()] = it.value();
      }
      auto r = tmpl->render(ctx, {"bos_token", "eos_token"}, opts);
      o.ok = r.ok();
      o.text = r.ok() ? r->text : r.status().message();
    }
    out.emplace_back(c.at("name").get<std::string>(), std::move(o));
  }
  return out;
}

inline std::vector<std::pair<std::string, Outcome>> render_all(
    const std::string& name, const nlohmann::ordered_json& cases) {
  return render_all_at(templates_dir(), name, cases);
}

inline std::vector<std::pair<std::string, Outcome>> outcomes_from_json(
    const nlohmann::ordered_json& j) {
  std::vector<std::pair<std::string, Outcome>> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    Outcome o;
    if (it.value().is_string()) {
      o.ok = true;
      o.text = it.value().get<std::string>();
    } else {
      o.text = it.value().value("error", std::string("?"));
    }
    out.emplace_back(it.key(), std::move(o));
  }
  return out;
}

inline std::vector<std::string> differences(
    const std::vector<std::pair<std::string, Outcome>>& want,
    const std::vector<std::pair<std::string, Outcome>>& got) {
  std::vector<std::string> diffs;
  for (const auto& [name, w] : want) {
    auto it = std::find_if(got.begin(), got.end(), [&](const auto& g) { return g.first == name; });
    if (it == got.end()) {
      diffs.push_back(name + ": not rendered");
      continue;
    }
    const Outcome& g = it->second;
    if (w.ok != g.ok) {
      diffs.push_back(name +
                      (w.ok ? ": Jinja2 renders, hearth raised: " + g.text
                            : ": Jinja2 raised (" + w.text + "), hearth rendered:\n" + g.text));
    } else if (w.ok && w.text != g.text) {
      size_t p = 0;
      while (p < w.text.size() && p < g.text.size() && w.text[p] == g.text[p]) ++p;
      const size_t from = p > 40 ? p - 40 : 0;
      diffs.push_back(name + ": differs at byte " + std::to_string(p) +
                      "\n  want: " + nlohmann::json(w.text.substr(from, 120)).dump() +
                      "\n  got:  " + nlohmann::json(g.text.substr(from, 120)).dump());
    }
  }
  return diffs;
}

}  // namespace hearth::jinja::testing
