// The device keys of a [[models]] table (docs/gpu.md "Configuration"): device and
// n_gpu_layers (and the draft model's draft_device / draft_n_gpu_layers) reach
// runtime::ModelConfig in their canonical form; a bad value fails naming the key and
// the value.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hearth/server/server.h"
#include "server/model_settings.h"

namespace hearth::server {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

Result<runtime::ModelConfig> model_of(const std::string& keys) {
  ServerConfig c;
  Status s = apply_config_toml("[[models]]\npath = \"m.gguf\"\n" + keys, c);
  if (!s.ok()) return s;
  return c.models.at(0);
}

TEST(DeviceSettings, TheKeysReachTheModelConfig) {
  auto m = model_of("device = \"cuda:1\"\nn_gpu_layers = 20\n");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->device, "cuda:1");
  EXPECT_EQ(m->n_gpu_layers, 20);
  EXPECT_FALSE(m->speculative.draft_device);  // the draft follows the target
  // "cuda" is device 0, written canonically; the order of the keys does not matter.
  auto c = model_of("n_gpu_layers = 4\ndevice = \"cuda\"\n");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->device, "cuda:0");
  EXPECT_EQ(c->n_gpu_layers, 4);
  auto d = model_of(
      "device = \"cuda:0\"\ndraft_model = \"d.gguf\"\ndraft_device = \"cpu\"\n"
      "draft_n_gpu_layers = 0\n");
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->speculative.draft_device, "cpu");
  EXPECT_EQ(d->speculative.draft_n_gpu_layers, 0);
  auto def = model_of("");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->device, "cpu");
  EXPECT_EQ(def->n_gpu_layers, -1);
}

TEST(DeviceSettings, BadValuesNameTheKeyAndTheValue) {
  const std::pair<std::string, std::vector<std::string>> cases[] = {
      {"device = \"cuda:x\"", {"models[0].device", "\"cuda:x\""}},
      {"device = \"gpu\"", {"models[0].device", "\"gpu\""}},
      {"device = \"cuda:-1\"", {"models[0].device", "\"cuda:-1\""}},
      {"device = 0", {"models[0].device", "a string"}},
      {"n_gpu_layers = -2", {"models[0].n_gpu_layers", "-2"}},
      {"n_gpu_layers = \"all\"", {"models[0].n_gpu_layers", "an integer"}},
      {"n_gpu_layers = 20", {"models[0].n_gpu_layers", "20 layers", "\"cpu\""}},
      {"draft_device = \"npu\"", {"models[0].draft_device", "\"npu\""}},
      {"device = \"cuda\"\ndraft_device = \"cpu\"\ndraft_n_gpu_layers = 3",
       {"models[0].draft_n_gpu_layers", "3 layers"}},
      {"draft_n_gpu_layers = -7", {"models[0].draft_n_gpu_layers", "-7"}},
  };
  for (const auto& [toml, expected] : cases) {
    auto m = model_of(toml);
    ASSERT_FALSE(m.ok()) << toml;
    for (const std::string& e : expected) EXPECT_THAT(m.status().message(), HasSubstr(e)) << toml;
  }
}

// The serve flags and POST /hearth/models use the same parser.
TEST(DeviceSettings, OneParserForEveryCaller) {
  runtime::ModelConfig m = default_model_config();
  EXPECT_TRUE(apply_model_setting(m, "device", std::string("cuda:3")).ok());
  EXPECT_EQ(m.device, "cuda:3");
  Status s = apply_model_setting(m, "device", std::string("cuda:x"));
  EXPECT_THAT(s.message(), AllOf(HasSubstr("device: "), HasSubstr("\"cuda:x\"")));
  m.model_path = "m.gguf";
  m.device = "cpu";
  m.n_gpu_layers = 2;
  EXPECT_THAT(finish_model_config(m).message(), HasSubstr("n_gpu_layers: 2 layers"));
}

}  // namespace
}  // namespace hearth::server
