// --device and --n-gpu-layers / -ngl on every command that loads a model for inference:
// a malformed value is a usage error naming the flag, a device this build or machine
// lacks fails before the load naming it (never a silent CPU run), and the benches
// report the device they ran on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/device_flags.h"
#include "gguf_cli_util.h"
#include "hearth/engine/device_spec.h"

namespace hearth::cli {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::run_cli;

// CLI11's exit code for a value its validator refuses (CLI::ExitCodes::ValidationError).
constexpr int kUsageError = static_cast<int>(CLI::ExitCodes::ValidationError);

TEST(DeviceFlagsAliases, NglBecomesTheLongFlagUntilDoubleDash) {
  const char* argv[] = {"hearth", "run", "-ngl",  "8",  "-ngl=4",
                        "-ngld",  "2",   "-nglx", "--", "-ngl"};
  EXPECT_THAT(expand_cli_aliases(10, argv),
              ElementsAre("hearth", "run", "--n-gpu-layers", "8", "--n-gpu-layers=4",
                          "--n-gpu-layers-draft", "2", "-nglx", "--", "-ngl"));
}

class DeviceFlagsCli : public testing::GenModelTest {
 protected:
  void SetUp() override {
    GenModelTest::SetUp();
    if (IsSkipped()) return;
    model_ = gen("--preset tiny --seed 5", "device_flags_tiny.gguf");
  }
  std::string model_;
};

// Every command that loads a model takes the flags, with the same checks.
TEST_F(DeviceFlagsCli, EveryCommandRefusesABadDeviceNamingTheFlag) {
  const std::string m = " -m " + model_;
  const std::string commands[] = {
      "run" + m + " -p hi -n 1", "logits" + m + " -p hi -n 1",
      "bench engine" + m,        "bench cold-warm" + m,
      "bench batch" + m,         "bench rows" + m,
      "bench spec" + m,          "bench delta" + m,
      "bench grammar" + m,       "serve" + m + " --port 0",
  };
  for (const std::string& cmd : commands) {
    auto bad = run_cli(cmd + " --device gpu");
    EXPECT_EQ(bad.exit_code, kUsageError) << cmd << "\n" << bad.err;
    EXPECT_THAT(bad.err, AllOf(HasSubstr("--device"), HasSubstr("\"gpu\""))) << cmd;
    auto layers = run_cli(cmd + " -ngl -4");
    EXPECT_EQ(layers.exit_code, kUsageError) << cmd << "\n" << layers.err;
    EXPECT_THAT(layers.err, HasSubstr("--n-gpu-layers")) << cmd;
  }
}

// Without a GPU (or without CUDA in the build) --device cuda:N fails the command before
// anything runs, naming the device; a layer count on the CPU is refused, not ignored.
TEST_F(DeviceFlagsCli, AnAbsentDeviceFailsClearly) {
  // (On a machine whose cuda:0 works, that device is not absent: only cuda:200 is.)
  if (!check_device_available(DeviceSpec{DeviceSpec::Kind::kCuda, 0}).ok()) {
    auto r = run_cli("run -m " + model_ + " -p hi -n 1 --device cuda:0");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("--device: device cuda:0"));
    if (!built_with_cuda()) {
      EXPECT_THAT(r.err, HasSubstr("built without CUDA"));
    }
  }
  auto far = run_cli("bench engine -m " + model_ + " --device cuda:200 --json -q");
  EXPECT_EQ(far.exit_code, 1) << far.err;
  EXPECT_THAT(far.err, HasSubstr("cuda:200"));
  auto cached = run_cli("run -m " + model_ + " -p hi -n 1 --device cuda:200 --cache-dir " +
                        testing::temp_path("device_flags_kvc"));
  EXPECT_EQ(cached.exit_code, 1) << cached.err;
  EXPECT_THAT(cached.err, HasSubstr("cuda:200"));
  auto counted = run_cli("run -m " + model_ + " -p hi -n 1 -ngl 12");
  EXPECT_EQ(counted.exit_code, 1) << counted.err;
  EXPECT_THAT(counted.err, AllOf(HasSubstr("--n-gpu-layers 12"), HasSubstr("\"cpu\"")));
  // serve: the runtime refuses the load, so the server does not start.
  auto serve = run_cli("serve -m " + model_ + " --port 0 --device cuda:200");
  EXPECT_EQ(serve.exit_code, 1) << serve.err;
  EXPECT_THAT(serve.err, HasSubstr("device cuda:200"));
  auto serve_count = run_cli("serve -m " + model_ + " --port 0 -ngl 3");
  EXPECT_EQ(serve_count.exit_code, 2) << serve_count.err;
  EXPECT_THAT(serve_count.err, HasSubstr("--n-gpu-layers: n_gpu_layers: 3 layers"));
  auto no_model = run_cli("serve --port 0 --device cpu");
  EXPECT_EQ(no_model.exit_code, 2);
  EXPECT_THAT(no_model.err, HasSubstr("apply to -m models"));
}

TEST_F(DeviceFlagsCli, BenchesReportTheDevice) {
  auto r = run_cli("bench engine -m " + model_ +
                   " -t 1 --prompts 8 --gen 2 --reps 1 -q --json --device cpu -ngl 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["n_gpu_layers"], 0);
  auto text = run_cli("bench rows -m " + model_ + " -t 1 --sizes 1 --depths 0 --reps 1");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("device cpu (0 GPU layers)"));
}

}  // namespace
}  // namespace hearth::cli
