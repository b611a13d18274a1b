#include "operator/backend/local/gpu_allocator.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/testing/test_dir.h"
#include "operator/backend/local/testing/fake_gpu_discovery.h"

namespace coach::backend::local {
namespace {

using testing::FakeGpuDiscovery;

std::unique_ptr<GpuAllocator> FourGpus() {
  FakeGpuDiscovery fake(4);
  auto alloc = GpuAllocator::Create(fake);
  EXPECT_TRUE(alloc.ok());
  EXPECT_EQ(fake.calls(), 1);
  return std::move(*alloc);
}

TEST(GpuAllocatorTest, HandsOutDisjointSets) {
  auto alloc = FourGpus();
  EXPECT_EQ(alloc->total(), 4);
  auto a = alloc->Allocate("ns/a-0", 2);
  auto b = alloc->Allocate("ns/b-0", 1);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, (std::vector<int>{0, 1}));
  EXPECT_EQ(*b, (std::vector<int>{2}));
  EXPECT_EQ(CudaVisibleDevices(*a), "0,1");
  EXPECT_EQ(alloc->free_count(), 1);
  // Idempotent for the same owner and count.
  EXPECT_EQ(*alloc->Allocate("ns/a-0", 2), *a);
  EXPECT_EQ(alloc->Allocate("ns/a-0", 3).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(alloc->Allocate("ns/cpu-only", 0)->empty());
}

TEST(GpuAllocatorTest, NeverVersusMustWait) {
  auto alloc = FourGpus();
  auto never = alloc->Allocate("ns/huge", 5);
  EXPECT_EQ(never.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(never.status().message().find("never"), std::string::npos);
  ASSERT_TRUE(alloc->Allocate("ns/a", 3).ok());
  auto wait = alloc->Allocate("ns/b", 2);
  EXPECT_EQ(wait.status().code(), absl::StatusCode::kResourceExhausted);
  alloc->Release("ns/a");
  alloc->Release("ns/unknown");  // No-op.
  auto b = alloc->Allocate("ns/b", 2);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (std::vector<int>{0, 1}));
}

TEST(GpuAllocatorTest, RestoreReAdoptedHoldings) {
  auto alloc = FourGpus();
  ASSERT_TRUE(alloc->Restore("ns/a", {1, 3}).ok());
  EXPECT_EQ(alloc->Restore("ns/b", {3}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(alloc->Restore("ns/b", {7}).code(), absl::StatusCode::kInvalidArgument);
  auto b = alloc->Allocate("ns/b", 2);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (std::vector<int>{0, 2}));
}

TEST(GpuAllocatorTest, DiscoveryErrorsPropagate) {
  FakeGpuDiscovery fake(2);
  fake.set_error(absl::InternalError("driver"));
  EXPECT_EQ(GpuAllocator::Create(fake).status().code(), absl::StatusCode::kInternal);
}

TEST(GpuDiscoveryTest, ParsesNvidiaSmiList) {
  EXPECT_EQ(ParseNvidiaSmiList("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-abc)\n"
                               "  MIG 1g.10gb Device 0: (UUID: MIG-x)\n"
                               "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-def)\n"),
            (std::vector<int>{0, 1}));
  EXPECT_TRUE(ParseNvidiaSmiList("No devices were found\n").empty());
}

TEST(GpuDiscoveryTest, CountsDeviceNodes) {
  const std::string dev = ::coach::testing::FreshTestDir("dev");
  for (const char* n : {"nvidia0", "nvidia2", "nvidiactl", "nvidia-uvm", "nvidia10", "null"}) {
    std::ofstream(absl::StrCat(dev, "/", n)) << "";
  }
  DevNodeGpuDiscovery discovery(dev);
  auto found = discovery.Discover();
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, (std::vector<int>{0, 2, 10}));
  EXPECT_TRUE(DevNodeGpuDiscovery(dev + "/missing").Discover()->empty());
}

TEST(GpuDiscoveryTest, RunsNvidiaSmiWithoutAShell) {
  const std::string fake_smi = ::coach::testing::FreshTestDir("nvidia-smi") + "/nvidia-smi";
  std::ofstream(fake_smi) << "#!/bin/sh\n[ \"$1\" = -L ] || exit 3\n"
                             "echo 'GPU 0: Fake (UUID: GPU-0)'\necho 'GPU 1: Fake (UUID: GPU-1)'\n";
  chmod(fake_smi.c_str(), 0755);
  auto found = NvidiaSmiGpuDiscovery(fake_smi).Discover();
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace coach::backend::local
