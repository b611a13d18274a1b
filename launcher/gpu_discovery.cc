#include "launcher/gpu_discovery.h"

#include <dirent.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace coach::launcher {
namespace {

bool IsNvidiaDeviceName(const std::string& name) {
  constexpr char kPrefix[] = "nvidia";
  if (name.rfind(kPrefix, 0) != 0) return false;
  const std::string rest = name.substr(sizeof(kPrefix) - 1);
  if (rest.empty()) return false;
  for (char c : rest) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

int RestrictByCudaVisibleDevices(int device_nodes, const std::string& visible) {
  int count = 0;
  std::set<int> seen;
  for (absl::string_view raw : absl::StrSplit(visible, ',')) {
    const std::string entry(absl::StripAsciiWhitespace(std::string(raw)));
    if (entry.rfind("GPU-", 0) == 0 || entry.rfind("MIG-", 0) == 0) {
      ++count;
      continue;
    }
    int index = 0;
    // The CUDA runtime ignores everything from the first bad entry on.
    if (!absl::SimpleAtoi(entry, &index) || index < 0 || index >= device_nodes ||
        !seen.insert(index).second) {
      break;
    }
    ++count;
  }
  return count < device_nodes ? count : device_nodes;
}

absl::StatusOr<int> DevNodeGpuDiscovery::CountGpus() const {
  DIR* dir = opendir(dev_dir_.c_str());
  if (dir == nullptr) {
    const int err = errno;
    return absl::InternalError(
        absl::StrCat("GPU discovery: cannot list ", dev_dir_, ": ", std::strerror(err)));
  }
  int nodes = 0;
  while (const dirent* entry = readdir(dir)) {
    if (IsNvidiaDeviceName(entry->d_name)) ++nodes;
  }
  closedir(dir);
  if (!cuda_visible_devices_.has_value()) return nodes;
  return RestrictByCudaVisibleDevices(nodes, *cuda_visible_devices_);
}

}  // namespace coach::launcher
