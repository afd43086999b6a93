// ModelConfig::device / n_gpu_layers reach the engine backend: a device this build or
// machine lacks fails the load naming it (never a silent CPU run), a bad text or count
// names the field, the draft model takes its own device or the target's, a custom
// backend refuses a device it would not see, and a loaded model reports where it runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "hearth/engine/device_spec.h"
#include "stub_fixture.h"

namespace hearth::runtime {
namespace {

using ::testing::HasSubstr;
using namespace testing;

const std::string kModel = std::string(HEARTH_SHARED_DIR) + "/models/stories260K.gguf";

class DeviceConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "SKIPPED: " << kModel << " is absent";
  }
  static ModelConfig config(std::string id) {
    ModelConfig c = engine_config(std::move(id), kModel, 1, /*caching=*/false);
    return c;
  }
};

TEST_F(DeviceConfig, TheDefaultIsTheCpuAndIsReported) {
  auto rt = make_runtime();
  ModelConfig c = config("cpu");
  EXPECT_EQ(c.device, "cpu");
  EXPECT_EQ(c.n_gpu_layers, -1);
  ASSERT_TRUE(rt->load_model(c).ok());
  auto info = rt->model_info("cpu");
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->device, "cpu");
  EXPECT_EQ(info->n_gpu_layers, 0);  // no layer runs on a GPU
}

// cuda:7 is on no machine this suite runs on: without CUDA the build says so, with CUDA
// the device is missing. Either way the load fails naming the device.
TEST_F(DeviceConfig, AnAbsentDeviceFailsTheLoadNamingIt) {
  auto rt = make_runtime();
  ModelConfig c = config("gpu7");
  c.device = "cuda:7";
  auto id = rt->load_model(c);
  ASSERT_FALSE(id.ok()) << "loaded on cuda:7";
  EXPECT_EQ(id.status().code(), ErrorCode::kUnsupported);
  EXPECT_THAT(id.status().message(), HasSubstr("device: device cuda:7"));
  if (!built_with_cuda()) {
    EXPECT_THAT(id.status().message(), HasSubstr("built without CUDA"));
  }
  EXPECT_TRUE(rt->list_models().empty());
}

TEST_F(DeviceConfig, BadTextAndCountsNameTheField) {
  auto rt = make_runtime();
  const std::pair<std::pair<std::string, int32_t>, std::string> cases[] = {
      {{"gpu", -1}, "device: expected"},
      {{"cuda:x", -1}, "\"cuda:x\""},
      {{"cpu", 20}, "n_gpu_layers: 20 layers on a GPU"},
      {{"cpu", -3}, "n_gpu_layers: expected -1"},
  };
  for (const auto& [setting, expected] : cases) {
    ModelConfig c = config("bad");
    c.device = setting.first;
    c.n_gpu_layers = setting.second;
    auto id = rt->load_model(c);
    ASSERT_FALSE(id.ok()) << setting.first << " " << setting.second;
    EXPECT_EQ(id.status().code(), ErrorCode::kInvalidArgument) << id.status().to_string();
    EXPECT_THAT(id.status().message(), HasSubstr(expected));
  }
}

TEST_F(DeviceConfig, TheDraftTakesItsOwnDeviceOrTheTargets) {
  auto rt = make_runtime();
  ModelConfig c = config("spec");
  c.speculative.draft_model = kModel;
  c.speculative.draft_device = "cuda:7";
  auto own = rt->load_model(c);
  ASSERT_FALSE(own.ok());
  EXPECT_THAT(own.status().message(), HasSubstr("draft_device: device cuda:7"));
  // A CPU draft beside the CPU target loads; a bad draft count names its key.
  c.speculative.draft_device = "cpu";
  c.speculative.draft_n_gpu_layers = 4;
  auto counted = rt->load_model(c);
  ASSERT_FALSE(counted.ok());
  EXPECT_THAT(counted.status().message(), HasSubstr("draft_n_gpu_layers: 4 layers"));
  c.speculative.draft_n_gpu_layers.reset();
  ASSERT_TRUE(rt->load_model(c).ok());
}

TEST(DeviceConfigStub, ACustomBackendRefusesADevice) {
  auto rt = make_runtime();
  ModelConfig c = stub_config("stub", 1);
  c.device = "cuda:0";
  auto id = rt->load_model(c);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(id.status().message(),
              HasSubstr("device \"cuda:0\" is honoured by the engine backend only"));
  c.device = "cpu";
  ASSERT_TRUE(rt->load_model(c).ok());
}

}  // namespace
}  // namespace hearth::runtime
