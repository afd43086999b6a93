#include "server/chat_template.h"

namespace hearth::server {
namespace {

bool contains(std::string_view text, std::string_view marker) {
  return text.find(marker) != std::string_view::npos;
}

// Families that have no system role fold the system prompt into the first user turn.
std::vector<ChatMessage> fold_system_into_first_user(const std::vector<ChatMessage>& messages) {
  std::string system;
  std::vector<ChatMessage> out;
  for (const auto& m : messages) {
    if (m.role == "system") {
      if (!system.empty()) system += "\n\n";
      system += m.content;
    } else {
      out.push_back(m);
    }
  }
  if (!system.empty()) {
    for (auto& m : out) {
      if (m.role == "user") {
        m.content = system + "\n\n" + m.content;
        return out;
      }
    }
    out.insert(out.begin(), ChatMessage{"user", system});
  }
  return out;
}

// Builds a RenderedChat: template text opens or extends a special range, request
// text (content, system prompts) never does.
class PromptBuilder {
 public:
  PromptBuilder& markup(std::string_view s) {
    if (s.empty()) return *this;
    if (!out_.special_ranges.empty() && out_.special_ranges.back().end == out_.text.size()) {
      out_.special_ranges.back().end += s.size();
    } else {
      out_.special_ranges.push_back({out_.text.size(), out_.text.size() + s.size()});
    }
    out_.text += s;
    return *this;
  }
  PromptBuilder& content(std::string_view s) {
    out_.text += s;
    return *this;
  }
  // Roles are template text (the request parser admits only system, user and
  // assistant, and phi-3's "<|user|>" needs the role inside the marker's range); any
  // other role is treated as content, to be safe.
  PromptBuilder& role(std::string_view r) {
    const bool known = r == "system" || r == "user" || r == "assistant" || r == "model";
    return known ? markup(r) : content(r);
  }
  RenderedChat finish() { return std::move(out_); }

 private:
  RenderedChat out_;
};

RenderedChat render_chatml(const std::vector<ChatMessage>& messages) {
  PromptBuilder b;
  for (const auto& m : messages) {
    b.markup("<|im_start|>").role(m.role).markup("\n").content(m.content).markup("<|im_end|>\n");
  }
  return b.markup("<|im_start|>assistant\n").finish();
}

RenderedChat render_llama3(const std::vector<ChatMessage>& messages) {
  PromptBuilder b;
  for (const auto& m : messages) {
    b.markup("<|start_header_id|>").role(m.role).markup("<|end_header_id|>\n\n");
    b.content(m.content).markup("<|eot_id|>");
  }
  return b.markup("<|start_header_id|>assistant<|end_header_id|>\n\n").finish();
}

// [INST] pairs; llama-2 puts the system prompt in <<SYS>> inside the first [INST].
RenderedChat render_inst(const std::vector<ChatMessage>& messages, bool llama2_sys) {
  std::string system;
  std::vector<ChatMessage> turns;
  if (llama2_sys) {
    for (const auto& m : messages) {
      if (m.role == "system") {
        system += (system.empty() ? "" : "\n") + m.content;
      } else {
        turns.push_back(m);
      }
    }
  } else {
    turns = fold_system_into_first_user(messages);
  }
  PromptBuilder b;
  bool first_user = true;
  bool open_sequence = true;  // the first <s> comes from the tokenizer's BOS
  for (const auto& m : turns) {
    if (m.role == "user") {
      if (!open_sequence) b.markup("<s>");
      open_sequence = false;
      b.markup("[INST] ");
      if (first_user && llama2_sys && !system.empty()) {
        b.markup("<<SYS>>\n").content(system).markup("\n<</SYS>>\n\n");
      }
      first_user = false;
      b.content(m.content).markup(" [/INST]");
    } else {  // assistant
      b.markup(llama2_sys ? " " : "").content(m.content).markup(llama2_sys ? " </s>" : "</s>");
    }
  }
  return b.finish();
}

RenderedChat render_tagged(const std::vector<ChatMessage>& messages, std::string_view end) {
  PromptBuilder b;
  for (const auto& m : messages) {
    b.markup("<|").role(m.role).markup("|>\n").content(m.content).markup(end).markup("\n");
  }
  return b.markup("<|assistant|>\n").finish();
}

RenderedChat render_gemma(const std::vector<ChatMessage>& messages) {
  PromptBuilder b;
  for (const auto& m : fold_system_into_first_user(messages)) {
    b.markup("<start_of_turn>").role(m.role == "assistant" ? "model" : m.role).markup("\n");
    b.content(m.content).markup("<end_of_turn>\n");
  }
  return b.markup("<start_of_turn>model\n").finish();
}

}  // namespace

std::optional<ChatFamily> chat_family_from_name(std::string_view name) {
  if (name == "chatml" || name == "qwen") return ChatFamily::kChatml;
  if (name == "llama-2" || name == "llama2") return ChatFamily::kLlama2;
  if (name == "llama-3" || name == "llama3") return ChatFamily::kLlama3;
  if (name == "mistral") return ChatFamily::kMistral;
  if (name == "zephyr") return ChatFamily::kZephyr;
  if (name == "gemma") return ChatFamily::kGemma;
  if (name == "phi-3" || name == "phi3") return ChatFamily::kPhi3;
  return std::nullopt;
}

const char* chat_family_name(ChatFamily family) {
  switch (family) {
    case ChatFamily::kChatml:
      return "chatml";
    case ChatFamily::kLlama2:
      return "llama-2";
    case ChatFamily::kLlama3:
      return "llama-3";
    case ChatFamily::kMistral:
      return "mistral";
    case ChatFamily::kZephyr:
      return "zephyr";
    case ChatFamily::kGemma:
      return "gemma";
    case ChatFamily::kPhi3:
      return "phi-3";
  }
  return "chatml";
}

std::optional<ChatFamily> detect_chat_family(std::string_view t) {
  // Order matters: the most specific markers first.
  if (contains(t, "<|start_header_id|>")) return ChatFamily::kLlama3;
  if (contains(t, "<|im_start|>")) return ChatFamily::kChatml;
  if (contains(t, "<start_of_turn>")) return ChatFamily::kGemma;
  if (contains(t, "<|user|>") || contains(t, "<|assistant|>")) {
    return contains(t, "<|end|>") ? ChatFamily::kPhi3 : ChatFamily::kZephyr;
  }
  if (contains(t, "[INST]")) {
    return contains(t, "<<SYS>>") ? ChatFamily::kLlama2 : ChatFamily::kMistral;
  }
  return std::nullopt;
}

RenderedChat render_chat(ChatFamily family, const std::vector<ChatMessage>& messages) {
  switch (family) {
    case ChatFamily::kChatml:
      return render_chatml(messages);
    case ChatFamily::kLlama3:
      return render_llama3(messages);
    case ChatFamily::kLlama2:
      return render_inst(messages, /*llama2_sys=*/true);
    case ChatFamily::kMistral:
      return render_inst(messages, /*llama2_sys=*/false);
    case ChatFamily::kZephyr:
      return render_tagged(messages, "</s>");
    case ChatFamily::kPhi3:
      return render_tagged(messages, "<|end|>");
    case ChatFamily::kGemma:
      return render_gemma(messages);
  }
  return render_chatml(messages);
}

}  // namespace hearth::server
