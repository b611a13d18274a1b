#include "launcher/gpu_discovery.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "common/testing/test_dir.h"

namespace coach::launcher {
namespace {

// A fake /dev with `gpus` device nodes plus the control nodes that must not count.
std::string MakeDevDir(const std::string& name, int gpus) {
  const std::string dir = ::coach::testing::FreshTestDir(name);
  auto touch = [&](const std::string& f) {
    close(open((dir + "/" + f).c_str(), O_CREAT | O_WRONLY, 0644));
  };
  for (int i = 0; i < gpus; ++i) touch("nvidia" + std::to_string(i));
  touch("nvidiactl");
  touch("nvidia-uvm");
  touch("nvidia-uvm-tools");
  touch("nvidia-modeset");
  touch("null");
  return dir;
}

TEST(DevNodeGpuDiscoveryTest, CountsOnlyNumberedNodes) {
  EXPECT_EQ(*DevNodeGpuDiscovery(MakeDevDir("four", 4), std::nullopt).CountGpus(), 4);
  EXPECT_EQ(*DevNodeGpuDiscovery(MakeDevDir("none", 0), std::nullopt).CountGpus(), 0);
}

TEST(DevNodeGpuDiscoveryTest, CudaVisibleDevicesRestricts) {
  const std::string dev = MakeDevDir("eight", 8);
  EXPECT_EQ(*DevNodeGpuDiscovery(dev, "0,1").CountGpus(), 2);
  EXPECT_EQ(*DevNodeGpuDiscovery(dev, "").CountGpus(), 0);
  EXPECT_EQ(*DevNodeGpuDiscovery(dev, "-1").CountGpus(), 0);
  EXPECT_EQ(*DevNodeGpuDiscovery(dev, "NoDevFiles").CountGpus(), 0);
  EXPECT_EQ(*DevNodeGpuDiscovery(dev, "3, 5").CountGpus(), 2);
}

TEST(DevNodeGpuDiscoveryTest, MissingDirIsInternal) {
  auto n = DevNodeGpuDiscovery("/nonexistent-coach-dev", std::nullopt).CountGpus();
  EXPECT_EQ(n.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(std::string(n.status().message()).find("/nonexistent-coach-dev"), std::string::npos);
}

TEST(RestrictByCudaVisibleDevicesTest, CudaRuntimeSemantics) {
  EXPECT_EQ(RestrictByCudaVisibleDevices(4, "0,1,2,3"), 4);
  EXPECT_EQ(RestrictByCudaVisibleDevices(4, "1,7,2"), 1);  // stops at the first invalid
  EXPECT_EQ(RestrictByCudaVisibleDevices(4, "2,2,3"), 1);  // and at a repeat
  EXPECT_EQ(RestrictByCudaVisibleDevices(2, "0,1,0"), 2);
  EXPECT_EQ(RestrictByCudaVisibleDevices(2, "GPU-aaaa,GPU-bbbb"), 2);
  EXPECT_EQ(RestrictByCudaVisibleDevices(1, "GPU-aaaa,GPU-bbbb"), 1);
  EXPECT_EQ(RestrictByCudaVisibleDevices(2, "MIG-x"), 1);
  EXPECT_EQ(RestrictByCudaVisibleDevices(0, "0"), 0);
}

}  // namespace
}  // namespace coach::launcher
