#include "operator/backend/local/local_layout.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
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

std::string ReplicaDir(const std::string& state_dir, const store::JobKey& job) {
  return absl::StrCat(state_dir, "/replicas/", job.namespace_, "/", job.name);
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// The names in `dir`; none when it does not exist. Errors: Internal.
absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return names;
    return absl::InternalError(absl::StrCat("opendir ", dir, ": ", strerror(errno)));
  }
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  return names;
}

// So that a power cut does not undo a move that the synced record written next relies on.
// Best effort: the rename is already visible to readers.
void SyncDir(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  fsync(fd);
  close(fd);
}

// An attempt directory's name is the attempt in decimal, as AttemptLogDir writes it; anything
// else there is not one (and is left alone).
std::optional<int> AttemptOfDirName(const std::string& name) {
  int attempt = 0;
  if (!absl::SimpleAtoi(name, &attempt) || attempt < 0 || std::to_string(attempt) != name) {
    return std::nullopt;
  }
  return attempt;
}

constexpr char kAttemptsDir[] = "attempts";
constexpr char kRestartCountFile[] = "restart_count";

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
  return ReplicaFile(ReplicaFiles(job, pod), kRestartCountFile);
}

namespace {

// "<restarts> <attempt>"; a file written before attempts were kept holds "<restarts>" alone.
std::optional<LocalLayout::Carried> ParseCarried(const std::string& text) {
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::StripAsciiWhitespace(text), ' ', absl::SkipEmpty());
  LocalLayout::Carried carried;
  if (fields.empty() || fields.size() > 2 || !absl::SimpleAtoi(fields[0], &carried.restarts)) {
    return std::nullopt;
  }
  int attempt = 0;
  if (fields.size() == 2 && absl::SimpleAtoi(fields[1], &attempt) && attempt >= 0) {
    carried.attempt = attempt;
  }
  return carried;
}

}  // namespace

LocalLayout::Carried LocalLayout::CarriedOver(const store::JobKey& job,
                                              const std::string& pod) const {
  absl::StatusOr<std::string> text = ReadFile(RestartCountPath(job, pod));
  if (!text.ok()) return Carried();
  return ParseCarried(*text).value_or(Carried());
}

absl::Status LocalLayout::CarryOver(const store::JobKey& job, const std::string& pod,
                                    const Carried& carried) const {
  RETURN_IF_ERROR(MakeDirs(ReplicaFilesDir(ReplicaFiles(job, pod))));
  std::string text = std::to_string(carried.restarts);
  if (carried.attempt.has_value()) absl::StrAppend(&text, " ", *carried.attempt);
  return WriteFileAtomic(RestartCountPath(job, pod), text);
}

absl::StatusOr<std::map<std::string, LocalLayout::Carried>> LocalLayout::CarriedOverAll(
    const store::JobKey& job) const {
  std::map<std::string, Carried> out;
  if (!SafeJob(job)) return out;
  const std::string dir = ReplicaDir(state_dir_, job);
  ASSIGN_OR_RETURN(const std::vector<std::string> names, ListDir(dir));
  const std::string suffix = absl::StrCat(".", kRestartCountFile);
  for (const std::string& name : names) {
    if (!absl::EndsWith(name, suffix)) continue;
    const std::string pod = name.substr(0, name.size() - suffix.size());
    if (!IsSafePathComponent(pod)) continue;
    absl::StatusOr<std::string> text = ReadFile(absl::StrCat(dir, "/", name));
    if (!text.ok()) continue;  // removed meanwhile
    if (std::optional<Carried> c = ParseCarried(*text); c.has_value()) out.emplace(pod, *c);
  }
  return out;
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

absl::StatusOr<std::string> LocalLayout::AttemptLogDir(const store::JobKey& job,
                                                       int attempt) const {
  if (!SafeJob(job) || attempt < 0) {
    return absl::InvalidArgumentError(absl::StrCat("job ", job.namespace_, "/", job.name,
                                                   ", attempt ", attempt, ": no log directory"));
  }
  return absl::StrCat(ReplicaDir(state_dir_, job), "/", kAttemptsDir, "/", attempt);
}

absl::Status LocalLayout::KeepAttemptLog(const store::JobKey& job, const std::string& pod,
                                         int ended) const {
  ASSIGN_OR_RETURN(const std::string log, LogPath(job, pod));
  ASSIGN_OR_RETURN(const std::string dir, AttemptLogDir(job, ended));
  bool moved = false;
  for (const char* suffix : {".1", ""}) {
    const std::string from = absl::StrCat(log, suffix);
    const std::string to = absl::StrCat(dir, "/", pod, ".log", suffix);
    if (!Exists(from) || Exists(to)) continue;
    if (!moved) RETURN_IF_ERROR(MakeDirs(dir));
    if (rename(from.c_str(), to.c_str()) != 0) {
      if (errno == ENOENT) continue;
      return absl::InternalError(absl::StrCat("rename ", from, " to ", to, ": ", strerror(errno)));
    }
    moved = true;
  }
  if (moved) {
    SyncDir(dir);
    SyncDir(DirName(log));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> LocalLayout::KeptAttempts(const store::JobKey& job) const {
  std::vector<int> attempts;
  if (!SafeJob(job)) return attempts;
  ASSIGN_OR_RETURN(const std::vector<std::string> names,
                   ListDir(absl::StrCat(ReplicaDir(state_dir_, job), "/", kAttemptsDir)));
  for (const std::string& name : names) {
    if (std::optional<int> a = AttemptOfDirName(name); a.has_value()) attempts.push_back(*a);
  }
  std::sort(attempts.begin(), attempts.end());
  return attempts;
}

absl::Status LocalLayout::TrimKeptAttempts(const store::JobKey& job) const {
  ASSIGN_OR_RETURN(const std::vector<int> attempts, KeptAttempts(job));
  // Ascending: the oldest after attempt 0 go first.
  const bool has_zero = !attempts.empty() && attempts.front() == 0;
  int excess = static_cast<int>(attempts.size()) - kKeptAttempts;
  for (size_t i = has_zero ? 1 : 0; i < attempts.size() && excess > 0; ++i, --excess) {
    ASSIGN_OR_RETURN(const std::string dir, AttemptLogDir(job, attempts[i]));
    RETURN_IF_ERROR(RemoveTree(dir));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> LocalLayout::KeptLogPods(const store::JobKey& job,
                                                                  int attempt) const {
  ASSIGN_OR_RETURN(const std::string dir, AttemptLogDir(job, attempt));
  ASSIGN_OR_RETURN(const std::vector<std::string> names, ListDir(dir));
  std::set<std::string> pods;
  for (const std::string& name : names) {
    absl::string_view pod = name;
    if (!absl::ConsumeSuffix(&pod, ".log") && !absl::ConsumeSuffix(&pod, ".log.1")) continue;
    if (IsSafePathComponent(std::string(pod))) pods.emplace(pod);
  }
  return std::vector<std::string>(pods.begin(), pods.end());
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
