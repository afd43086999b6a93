// hearth::parse_device, check_n_gpu_layers and check_device_available: the one parser of
// "cpu" / "cuda" / "cuda:N" every layer uses, and the check that the build and machine
// have the device (here, without a GPU, a CUDA device is always refused, naming it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hearth/engine/device_spec.h"

namespace hearth {
namespace {

using ::testing::HasSubstr;

TEST(DeviceSpec, ParsesTheThreeForms) {
  auto cpu = parse_device("cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  EXPECT_TRUE(cpu->is_cpu());
  EXPECT_EQ(cpu->name(), "cpu");
  auto cuda = parse_device("cuda");
  ASSERT_TRUE(cuda.ok()) << cuda.status().to_string();
  EXPECT_EQ(cuda->kind, DeviceSpec::Kind::kCuda);
  EXPECT_EQ(cuda->index, 0);
  EXPECT_EQ(cuda->name(), "cuda:0");
  for (int32_t n : {0, 1, 7, 12, kMaxCudaDevice}) {
    auto d = parse_device("cuda:" + std::to_string(n));
    ASSERT_TRUE(d.ok()) << n << ": " << d.status().to_string();
    EXPECT_EQ(d->index, n);
    EXPECT_EQ(d->name(), "cuda:" + std::to_string(n));
  }
}

TEST(DeviceSpec, RefusesEverythingElseQuotingTheText) {
  for (const char* bad : {"",        "gpu",      "GPU",      "CUDA",
                          "CUDA:0",  "Cpu",      " cpu",     "cpu ",
                          "cuda:",   "cuda:x",   "cuda:-1",  "cuda:+1",
                          "cuda:1x", "cuda: 1",  "cuda:256", "cuda:99999999999",
                          "cuda0",   "cuda:0:1", "metal",    "cpu:0"}) {
    auto d = parse_device(bad);
    ASSERT_FALSE(d.ok()) << "'" << bad << "' parsed as " << d->name();
    EXPECT_EQ(d.status().code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_THAT(d.status().message(), HasSubstr(std::string("\"") + bad + "\"")) << bad;
    EXPECT_THAT(d.status().message(), HasSubstr("\"cuda:N\"")) << bad;
  }
}

TEST(DeviceSpec, LayerCounts) {
  const DeviceSpec cpu;
  const DeviceSpec gpu{DeviceSpec::Kind::kCuda, 0};
  for (int64_t ok : {-1L, 0L, 1L, 20L, 999L}) EXPECT_TRUE(check_n_gpu_layers(ok, gpu).ok()) << ok;
  for (int64_t ok : {-1L, 0L}) EXPECT_TRUE(check_n_gpu_layers(ok, cpu).ok()) << ok;
  for (int64_t bad : {int64_t{-2}, int64_t{-100}, int64_t{1} << 40}) {
    Status s = check_n_gpu_layers(bad, gpu);
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr(std::to_string(bad)));
  }
  // A count on the CPU is refused, not ignored.
  Status s = check_n_gpu_layers(20, cpu);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("20 layers"));
  EXPECT_THAT(s.message(), HasSubstr("\"cpu\""));
}

TEST(DeviceSpec, AvailabilityNamesTheDevice) {
  EXPECT_TRUE(check_device_available(DeviceSpec{}).ok());
  // cuda:200 exists on no machine this suite runs on.
  Status s = check_device_available(DeviceSpec{DeviceSpec::Kind::kCuda, 200});
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("cuda:200"));
  if (!built_with_cuda()) {
    EXPECT_THAT(s.message(), HasSubstr("built without CUDA"));
    Status s0 = check_device_available(DeviceSpec{DeviceSpec::Kind::kCuda, 0});
    EXPECT_EQ(s0.code(), ErrorCode::kUnsupported);
    EXPECT_THAT(s0.message(), HasSubstr("cuda:0"));
  }
}

}  // namespace
}  // namespace hearth
