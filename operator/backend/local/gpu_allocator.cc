#include "operator/backend/local/gpu_allocator.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace coach::backend::local {

absl::StatusOr<std::vector<int>> DevNodeGpuDiscovery::Discover() {
  std::vector<int> out;
  DIR* dir = opendir(dev_dir_.c_str());
  if (dir == nullptr) {
    if (errno == ENOENT) return out;
    return absl::InternalError(absl::StrCat("opendir ", dev_dir_, ": ", strerror(errno)));
  }
  while (struct dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (!absl::StartsWith(name, "nvidia")) continue;
    std::string rest = name.substr(6);
    int index;
    if (!rest.empty() && std::all_of(rest.begin(), rest.end(), ::isdigit) &&
        absl::SimpleAtoi(rest, &index)) {
      out.push_back(index);
    }
  }
  closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> ParseNvidiaSmiList(const std::string& output) {
  std::vector<int> out;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    std::string l(absl::StripAsciiWhitespace(std::string(line)));
    if (!absl::StartsWith(l, "GPU ")) continue;
    size_t colon = l.find(':');
    int index;
    if (colon != std::string::npos && absl::SimpleAtoi(l.substr(4, colon - 4), &index)) {
      out.push_back(index);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<std::vector<int>> NvidiaSmiGpuDiscovery::Discover() {
  if (access(nvidia_smi_.c_str(), X_OK) != 0) return DevNodeGpuDiscovery().Discover();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  std::string arg0 = nvidia_smi_, arg1 = "-L";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  char* envp[] = {nullptr};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    execve(argv[0], argv, envp);
    _exit(127);
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  }
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat(nvidia_smi_, " -L failed: ", out));
  }
  return ParseNvidiaSmiList(out);
}

std::string CudaVisibleDevices(const std::vector<int>& devices) {
  return absl::StrJoin(devices, ",");
}

absl::StatusOr<std::unique_ptr<GpuAllocator>> GpuAllocator::Create(GpuDiscovery& discovery) {
  absl::StatusOr<std::vector<int>> devices = discovery.Discover();
  if (!devices.ok()) return devices.status();
  return std::unique_ptr<GpuAllocator>(new GpuAllocator(std::move(*devices)));
}

absl::StatusOr<std::vector<int>> GpuAllocator::Allocate(const std::string& owner, int count) {
  if (count <= 0) return std::vector<int>();
  if (count > total()) {
    return absl::InvalidArgumentError(absl::StrCat("nvidia.com/gpu: ", count,
                                                   " requested but this host has ", total(),
                                                   " GPU(s); the request can never be met"));
  }
  absl::MutexLock lock(&mu_);
  auto it = held_.find(owner);
  if (it != held_.end()) {
    if (static_cast<int>(it->second.size()) == count) return it->second;
    return absl::FailedPreconditionError(
        absl::StrCat(owner, " already holds ", it->second.size(), " GPU(s), asked for ", count));
  }
  std::vector<int> picked;
  for (int d : devices_) {
    if (static_cast<int>(picked.size()) == count) break;
    if (busy_.count(d) == 0) picked.push_back(d);
  }
  if (static_cast<int>(picked.size()) < count) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "nvidia.com/gpu: ", count, " requested, ", total() - static_cast<int>(busy_.size()), " of ",
        total(), " free now; waiting for GPUs to be released"));
  }
  busy_.insert(picked.begin(), picked.end());
  held_[owner] = picked;
  return picked;
}

absl::Status GpuAllocator::Restore(const std::string& owner, const std::vector<int>& devices) {
  absl::MutexLock lock(&mu_);
  for (int d : devices) {
    if (std::find(devices_.begin(), devices_.end(), d) == devices_.end()) {
      return absl::InvalidArgumentError(absl::StrCat("GPU ", d, " does not exist on this host"));
    }
    auto held = held_.find(owner);
    bool mine = held != held_.end() &&
                std::find(held->second.begin(), held->second.end(), d) != held->second.end();
    if (busy_.count(d) > 0 && !mine) {
      return absl::FailedPreconditionError(absl::StrCat("GPU ", d, " is held by another replica"));
    }
  }
  for (int d : devices) busy_.insert(d);
  std::vector<int>& mine = held_[owner];
  for (int d : devices) {
    if (std::find(mine.begin(), mine.end(), d) == mine.end()) mine.push_back(d);
  }
  std::sort(mine.begin(), mine.end());
  return absl::OkStatus();
}

void GpuAllocator::Release(const std::string& owner) {
  absl::MutexLock lock(&mu_);
  auto it = held_.find(owner);
  if (it == held_.end()) return;
  for (int d : it->second) busy_.erase(d);
  held_.erase(it);
}

int GpuAllocator::free_count() {
  absl::MutexLock lock(&mu_);
  return total() - static_cast<int>(busy_.size());
}

}  // namespace coach::backend::local
