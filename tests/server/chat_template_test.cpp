#include "server/chat_template.h"

#include <gtest/gtest.h>

namespace hearth::server {
namespace {

const std::vector<ChatMessage> kConversation = {
    {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Name a colour."}};

TEST(ChatTemplateDetect, RecognisesEachFamilyByMarkers) {
  EXPECT_EQ(detect_chat_family("{{ '<|im_start|>' + m.role }}"), ChatFamily::kChatml);
  EXPECT_EQ(detect_chat_family("{{ '<|start_header_id|>' + role + '<|end_header_id|>' }}"),
            ChatFamily::kLlama3);
  EXPECT_EQ(detect_chat_family("{{ '[INST] <<SYS>>\\n' + sys }}"), ChatFamily::kLlama2);
  EXPECT_EQ(detect_chat_family("{{ '[INST] ' + content + ' [/INST]' }}"), ChatFamily::kMistral);
  EXPECT_EQ(detect_chat_family("{{ '<|user|>\\n' + content + eos_token }}"), ChatFamily::kZephyr);
  EXPECT_EQ(detect_chat_family("{{ '<|user|>\\n' + content + '<|end|>' }}"), ChatFamily::kPhi3);
  EXPECT_EQ(detect_chat_family("{{ '<start_of_turn>' + role }}"), ChatFamily::kGemma);
  EXPECT_EQ(detect_chat_family("{{ something else }}"), std::nullopt);
  EXPECT_EQ(detect_chat_family(""), std::nullopt);
}

TEST(ChatTemplateNames, RoundTripAndAliases) {
  for (auto f :
       {ChatFamily::kChatml, ChatFamily::kLlama2, ChatFamily::kLlama3, ChatFamily::kMistral,
        ChatFamily::kZephyr, ChatFamily::kGemma, ChatFamily::kPhi3}) {
    EXPECT_EQ(chat_family_from_name(chat_family_name(f)), f);
  }
  EXPECT_EQ(chat_family_from_name("qwen"), ChatFamily::kChatml);
  EXPECT_EQ(chat_family_from_name("jinja"), std::nullopt);
}

TEST(ChatTemplateRender, Chatml) {
  EXPECT_EQ(render_chat(ChatFamily::kChatml, kConversation).text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nName a colour.<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplateRender, Llama3) {
  EXPECT_EQ(render_chat(ChatFamily::kLlama3, kConversation).text,
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nName a colour.<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateRender, Llama2PutsSystemInFirstInst) {
  EXPECT_EQ(render_chat(ChatFamily::kLlama2, kConversation).text,
            "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s>"
            "<s>[INST] Name a colour. [/INST]");
}

TEST(ChatTemplateRender, MistralFoldsSystemIntoFirstUser) {
  EXPECT_EQ(render_chat(ChatFamily::kMistral, kConversation).text,
            "[INST] Be brief.\n\nHi [/INST]Hello!</s><s>[INST] Name a colour. [/INST]");
}

TEST(ChatTemplateRender, Zephyr) {
  EXPECT_EQ(render_chat(ChatFamily::kZephyr, kConversation).text,
            "<|system|>\nBe brief.</s>\n<|user|>\nHi</s>\n<|assistant|>\nHello!</s>\n"
            "<|user|>\nName a colour.</s>\n<|assistant|>\n");
}

TEST(ChatTemplateRender, Phi3) {
  EXPECT_EQ(render_chat(ChatFamily::kPhi3, kConversation).text,
            "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello!<|end|>\n"
            "<|user|>\nName a colour.<|end|>\n<|assistant|>\n");
}

TEST(ChatTemplateRender, GemmaUsesModelRoleAndFoldsSystem) {
  EXPECT_EQ(render_chat(ChatFamily::kGemma, kConversation).text,
            "<start_of_turn>user\nBe "
            "brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
            "<start_of_turn>user\nName a colour.<end_of_turn>\n<start_of_turn>model\n");
}

TEST(ChatTemplateRender, SingleUserTurnWithoutSystem) {
  const std::vector<ChatMessage> one = {{"user", "Hi"}};
  EXPECT_EQ(render_chat(ChatFamily::kLlama2, one).text, "[INST] Hi [/INST]");
  EXPECT_EQ(render_chat(ChatFamily::kGemma, one).text,
            "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
}

}  // namespace
}  // namespace hearth::server
