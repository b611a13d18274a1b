#pragma once

// GPUs of this host for local replicas that request `nvidia.com/gpu: N`: discovery
// behind an interface (tests use testing/fake_gpu_discovery.h), and an allocator that
// hands out disjoint device index sets, exported to the replica as CUDA_VISIBLE_DEVICES.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace coach::backend::local {

class GpuDiscovery {
 public:
  virtual ~GpuDiscovery() = default;
  // Device indices of the host's GPUs, ascending; empty when there are none.
  // Errors: Internal (a discovery source exists but could not be read).
  virtual absl::StatusOr<std::vector<int>> Discover() = 0;
};

// Counts /dev/nvidia<N> device nodes (nvidiactl, nvidia-uvm, ... are not GPUs).
class DevNodeGpuDiscovery : public GpuDiscovery {
 public:
  explicit DevNodeGpuDiscovery(std::string dev_dir = "/dev") : dev_dir_(std::move(dev_dir)) {}
  absl::StatusOr<std::vector<int>> Discover() override;

 private:
  std::string dev_dir_;
};

// Runs `nvidia-smi -L` (argv directly, no shell) and parses "GPU <i>: ..." lines.
// Falls back to DevNodeGpuDiscovery when the binary is not there.
class NvidiaSmiGpuDiscovery : public GpuDiscovery {
 public:
  explicit NvidiaSmiGpuDiscovery(std::string nvidia_smi = "/usr/bin/nvidia-smi")
      : nvidia_smi_(std::move(nvidia_smi)) {}
  absl::StatusOr<std::vector<int>> Discover() override;

 private:
  std::string nvidia_smi_;
};

// "GPU 0: NVIDIA H100 (UUID: GPU-...)" lines -> {0, ...}; other lines are ignored.
std::vector<int> ParseNvidiaSmiList(const std::string& output);

// "0,2,3": the CUDA_VISIBLE_DEVICES value for a set of indices.
std::string CudaVisibleDevices(const std::vector<int>& devices);

// Thread-safe. Owners are opaque strings (the backend uses "<ns>/<pod>").
class GpuAllocator {
 public:
  // Discovers once. Errors: whatever discovery returns.
  static absl::StatusOr<std::unique_ptr<GpuAllocator>> Create(GpuDiscovery& discovery);

  // `count` distinct devices for `owner` (lowest free indices first). count <= 0 gives
  // an empty set. Asking again for the same owner returns what it holds when the count
  // matches. Errors: InvalidArgument (count exceeds the host's GPUs: can never be met),
  // ResourceExhausted (not enough free now: wait for a release and retry),
  // FailedPrecondition (the owner holds a different number of devices).
  absl::StatusOr<std::vector<int>> Allocate(const std::string& owner, int count);

  // Re-registers devices a re-adopted replica holds (from its stored record).
  // Errors: InvalidArgument (unknown device index), FailedPrecondition (a device is
  // held by another owner).
  absl::Status Restore(const std::string& owner, const std::vector<int>& devices);

  // Frees the owner's devices; releasing an owner with none is a no-op.
  void Release(const std::string& owner);

  int total() const { return static_cast<int>(devices_.size()); }
  int free_count();

 private:
  explicit GpuAllocator(std::vector<int> devices) : devices_(std::move(devices)) {}

  const std::vector<int> devices_;
  absl::Mutex mu_;
  std::map<std::string, std::vector<int>> held_ ABSL_GUARDED_BY(mu_);
  std::set<int> busy_ ABSL_GUARDED_BY(mu_);
};

}  // namespace coach::backend::local
