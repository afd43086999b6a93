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

std::string render_chatml(const std::vector<ChatMessage>& messages) {
  std::string s;
  for (const auto& m : messages) s += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  return s + "<|im_start|>assistant\n";
}

std::string render_llama3(const std::vector<ChatMessage>& messages) {
  std::string s;
  for (const auto& m : messages) {
    s += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + m.content + "<|eot_id|>";
  }
  return s + "<|start_header_id|>assistant<|end_header_id|>\n\n";
}

// [INST] pairs; llama-2 puts the system prompt in <<SYS>> inside the first [INST].
std::string render_inst(const std::vector<ChatMessage>& messages, bool llama2_sys) {
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
  std::string s;
  bool first_user = true;
  bool open_sequence = true;  // the first <s> comes from the tokenizer's BOS
  for (const auto& m : turns) {
    if (m.role == "user") {
      if (!open_sequence) s += "<s>";
      open_sequence = false;
      std::string content = m.content;
      if (first_user && llama2_sys && !system.empty()) {
        content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content;
      }
      first_user = false;
      s += "[INST] " + content + " [/INST]";
    } else {  // assistant
      s += (llama2_sys ? " " : "") + m.content + (llama2_sys ? " </s>" : "</s>");
    }
  }
  return s;
}

std::string render_tagged(const std::vector<ChatMessage>& messages, const std::string& end) {
  std::string s;
  for (const auto& m : messages) s += "<|" + m.role + "|>\n" + m.content + end + "\n";
  return s + "<|assistant|>\n";
}

std::string render_gemma(const std::vector<ChatMessage>& messages) {
  std::string s;
  for (const auto& m : fold_system_into_first_user(messages)) {
    const std::string role = m.role == "assistant" ? "model" : m.role;
    s += "<start_of_turn>" + role + "\n" + m.content + "<end_of_turn>\n";
  }
  return s + "<start_of_turn>model\n";
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

std::string render_chat(ChatFamily family, const std::vector<ChatMessage>& messages) {
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
