#pragma once

// A GpuDiscovery with a fixed device list and an injectable error; counts calls.

#include <vector>

#include "absl/status/status.h"
#include "operator/backend/local/gpu_allocator.h"

namespace coach::backend::local::testing {

class FakeGpuDiscovery : public GpuDiscovery {
 public:
  explicit FakeGpuDiscovery(int count) {
    for (int i = 0; i < count; ++i) devices_.push_back(i);
  }
  absl::StatusOr<std::vector<int>> Discover() override {
    ++calls_;
    if (!error_.ok()) return error_;
    return devices_;
  }
  void set_error(absl::Status error) { error_ = std::move(error); }
  int calls() const { return calls_; }

 private:
  std::vector<int> devices_;
  absl::Status error_;
  int calls_ = 0;
};

}  // namespace coach::backend::local::testing
