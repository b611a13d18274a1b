#pragma once

// How many GPUs this pod may use, behind an interface so that config parsing is testable
// on machines without GPUs (tests use a fake).

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace coach::launcher {

class GpuDiscovery {
 public:
  virtual ~GpuDiscovery() = default;
  // The number of usable GPUs, >= 0.
  // Errors: Internal when the device directory cannot be listed.
  virtual absl::StatusOr<int> CountGpus() const = 0;
};

// Counts NVIDIA device nodes `<dev_dir>/nvidia<digits>` (not nvidiactl, nvidia-uvm, ...).
// When `cuda_visible_devices` is set it restricts the count the way the CUDA runtime does:
// "" or a leading invalid entry (e.g. "-1", "NoDevFiles") means none; the list is read in
// order and stops at the first index that is out of range or repeated; "GPU-..."/"MIG-..."
// UUIDs count as one device each (they cannot be checked without NVML); the result never
// exceeds the number of device nodes.
class DevNodeGpuDiscovery : public GpuDiscovery {
 public:
  DevNodeGpuDiscovery(std::string dev_dir, std::optional<std::string> cuda_visible_devices)
      : dev_dir_(std::move(dev_dir)), cuda_visible_devices_(std::move(cuda_visible_devices)) {}
  absl::StatusOr<int> CountGpus() const override;

 private:
  std::string dev_dir_;
  std::optional<std::string> cuda_visible_devices_;
};

// Applies CUDA_VISIBLE_DEVICES semantics (above) to `device_nodes` present devices.
int RestrictByCudaVisibleDevices(int device_nodes, const std::string& visible);

}  // namespace coach::launcher
