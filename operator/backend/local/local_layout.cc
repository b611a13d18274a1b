#include "operator/backend/local/local_layout.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "operator/backend/local/fs_util.h"
#include "operator/backend/local/process/exit_record.h"

namespace coach::backend::local {
namespace {

absl::Status RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return absl::InternalError(absl::StrCat("remove ", path, ": ", ec.message()));
  return absl::OkStatus();
}

bool SafeJob(const store::JobKey& job) {
  return IsSafePathComponent(job.namespace_) && IsSafePathComponent(job.name);
}

}  // namespace

std::string LocalLayout::ReplicaFiles(const store::JobKey& job, const std::string& pod) const {
  return absl::StrCat(state_dir_, "/replicas/", job.namespace_, "/", job.name, "/", pod, ".");
}

absl::StatusOr<std::string> LocalLayout::LogPath(const store::JobKey& job,
                                                 const std::string& pod) const {
  for (const std::string* part : {&job.namespace_, &job.name, &pod}) {
    if (!IsSafePathComponent(*part)) {
      return absl::InvalidArgumentError(
          absl::StrCat("name '", *part, "' cannot be used in a log path"));
    }
  }
  return ReplicaFile(ReplicaFiles(job, pod), "log");
}

absl::Status LocalLayout::CreateLog(const store::JobKey& job, const std::string& pod) const {
  ASSIGN_OR_RETURN(const std::string path, LogPath(job, pod));
  RETURN_IF_ERROR(MakeDirs(DirName(path)));
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat("open ", path, ": ", strerror(errno)));
  close(fd);
  return absl::OkStatus();
}

std::string LocalLayout::RestartCountPath(const store::JobKey& job, const std::string& pod) const {
  return ReplicaFile(ReplicaFiles(job, pod), "restart_count");
}

int LocalLayout::CarriedRestartCount(const store::JobKey& job, const std::string& pod) const {
  absl::StatusOr<std::string> carried = ReadFile(RestartCountPath(job, pod));
  int restarts = 0;
  if (!carried.ok() || !absl::SimpleAtoi(*carried, &restarts)) return 0;
  return restarts;
}

absl::Status LocalLayout::CarryRestartCount(const store::JobKey& job, const std::string& pod,
                                            int restarts) const {
  RETURN_IF_ERROR(MakeDirs(ReplicaFilesDir(ReplicaFiles(job, pod))));
  return WriteFileAtomic(RestartCountPath(job, pod), std::to_string(restarts));
}

absl::Status LocalLayout::RemoveEndedAttemptFiles(const store::JobKey& job,
                                                  const std::string& pod) const {
  for (const char* f : kRunFileNames) {
    const std::string path = ReplicaFile(ReplicaFiles(job, pod), f);
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return absl::InternalError(absl::StrCat("unlink ", path, ": ", strerror(errno)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> LocalLayout::ConfigMapDir(const store::JobKey& job,
                                                      const std::string& name) const {
  if (!SafeJob(job) || !IsSafePathComponent(name)) {
    return absl::InvalidArgumentError(absl::StrCat("ConfigMap \"", name, "\": unsafe name"));
  }
  return absl::StrCat(state_dir_, "/configmaps/", job.namespace_, "/", job.name, "/", name);
}

absl::Status LocalLayout::WriteConfigMap(const store::JobKey& job, const std::string& name,
                                         const std::map<std::string, std::string>& data) const {
  ASSIGN_OR_RETURN(const std::string dir, ConfigMapDir(job, name));
  RETURN_IF_ERROR(MakeDirs(dir));
  for (const auto& [key, value] : data) {
    if (!IsSafePathComponent(key)) continue;
    RETURN_IF_ERROR(WriteFileAtomic(absl::StrCat(dir, "/", key), value));
  }
  return absl::OkStatus();
}

absl::Status LocalLayout::RemoveJob(const store::JobKey& job) const {
  if (!SafeJob(job)) return absl::OkStatus();
  for (const char* sub : {"replicas", "configmaps"}) {
    RETURN_IF_ERROR(
        RemoveTree(absl::StrCat(state_dir_, "/", sub, "/", job.namespace_, "/", job.name)));
  }
  return absl::OkStatus();
}

std::string LocalLayout::MlflowBindingDir() const {
  return absl::StrCat(state_dir_, "/mlflow-python");
}

}  // namespace coach::backend::local
