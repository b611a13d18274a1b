#include "operator/backend/local/replica_facts.h"

#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "operator/backend/local/process/exit_record.h"
#include "operator/backend/local/process/replica_cgroup.h"

namespace coach::backend::local {
namespace {

int64_t Nanos(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + static_cast<int64_t>(t.tv_nsec);
}

// The heartbeat's mtime; nullopt without one.
std::optional<absl::Time> HeartbeatTime(const std::string& replica_files) {
  struct stat st;
  if (stat(ReplicaFile(replica_files, kHeartbeatFileName).c_str(), &st) != 0 ||
      !S_ISREG(st.st_mode)) {
    return std::nullopt;
  }
  return absl::TimeFromTimespec(st.st_mtim);
}

std::optional<model::ObservedPod::Progress> Combine(const std::optional<ProgressRecord>& record,
                                                    std::optional<absl::Time> heartbeat) {
  if (!record.has_value() && !heartbeat.has_value()) return std::nullopt;
  model::ObservedPod::Progress p;
  if (record.has_value()) {
    p.step = record->step;
    p.metrics = record->metrics;
    p.steps_per_second = record->steps_per_second;
    p.time = record->time;
  }
  if (heartbeat.has_value()) p.time = std::max(p.time, *heartbeat);
  return p;
}

std::optional<ProgressRecord> ReadProgress(const std::string& replica_files) {
  absl::StatusOr<ProgressRecord> record = ReadProgressFile(replica_files);
  if (!record.ok()) return std::nullopt;
  return *std::move(record);
}

// Whether a process of the run is stopped. `table`: the /proc scan, made at the first need.
bool AnyStopped(const ProcessHandle& process, const std::string& cgroup,
                std::optional<std::vector<ProcStat>>& table) {
  if (!cgroup.empty()) {
    // A missing cgroup: the run ended meanwhile (the shim removes it last).
    absl::StatusOr<std::vector<pid_t>> members = CgroupMembers(cgroup);
    if (!members.ok()) return false;
    for (pid_t pid : *members) {
      absl::StatusOr<ProcStat> st = ReadProcStat(pid);
      if (st.ok() && IsStopped(*st)) return true;
    }
    return false;
  }
  if (!table.has_value()) table = ListProcesses();
  // Descendants of that shim only, not of a process that took its pid.
  const bool same_shim = std::any_of(table->begin(), table->end(), [&](const ProcStat& p) {
    return p.pid == process.pid && p.start_time == process.start_time;
  });
  if (!same_shim) return false;
  for (const ProcStat& p : DescendantsIn(*table, process.pid)) {
    if (IsStopped(p)) return true;
  }
  return false;
}

}  // namespace

std::vector<ReplicaFacts::Facts> ReplicaFacts::Read(const std::vector<Replica>& replicas) {
  std::vector<Facts> out(replicas.size());
  std::optional<std::vector<ProcStat>> table;
  for (size_t i = 0; i < replicas.size(); ++i) {
    const ProcessHandle& process = replicas[i].process;
    if (process.pid == 0) continue;
    const std::string& files = process.replica_files;
    if (!replicas[i].running) {
      Forget(files);
      out[i].progress = Combine(ReadProgress(files), HeartbeatTime(files));
      continue;
    }
    out[i].progress = Combine(CachedProgress(process), HeartbeatTime(files));
    out[i].stopped = Stopped(process, table);
  }
  return out;
}

std::optional<ProgressRecord> ReplicaFacts::CachedProgress(const ProcessHandle& process) {
  const std::string& files = process.replica_files;
  std::optional<FileVersion> version;
  struct stat st;
  if (stat(ReplicaFile(files, kProgressFileName).c_str(), &st) == 0) {
    version = FileVersion{st.st_ino, static_cast<int64_t>(st.st_size), Nanos(st.st_mtim),
                          Nanos(st.st_ctim)};
  }
  {
    absl::MutexLock lock(&mu_);
    Entry& e = entries_[files];
    if (e.pid != process.pid || e.start_time != process.start_time) {
      e = Entry();
      e.pid = process.pid;
      e.start_time = process.start_time;
    }
    if (!version.has_value()) {
      e.progress_version.reset();
      e.progress.reset();
      return std::nullopt;
    }
    if (e.progress_version == version) return e.progress;
  }
  // Parsed outside the lock: other jobs' passes need not wait for this file.
  std::optional<ProgressRecord> parsed =
      version->size <= kMaxProgressFileBytes ? ReadProgress(files) : std::nullopt;
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(files);
  if (it != entries_.end() && it->second.pid == process.pid &&
      it->second.start_time == process.start_time) {
    it->second.progress_version = version;
    it->second.progress = parsed;
  }
  return parsed;
}

bool ReplicaFacts::Stopped(const ProcessHandle& process,
                           std::optional<std::vector<ProcStat>>& table) {
  const absl::Duration now = clock_->Monotonic();
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(process.replica_files);
    if (it != entries_.end() && it->second.pid == process.pid &&
        it->second.start_time == process.start_time && it->second.stopped_checked.has_value() &&
        now - *it->second.stopped_checked < stopped_interval_) {
      return it->second.stopped;
    }
  }
  const bool stopped = AnyStopped(process, CgroupOf(process), table);
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(process.replica_files);
  if (it != entries_.end() && it->second.pid == process.pid &&
      it->second.start_time == process.start_time) {
    it->second.stopped_checked = now;
    it->second.stopped = stopped;
  }
  return stopped;
}

std::string ReplicaFacts::CgroupOf(const ProcessHandle& process) {
  const std::string& files = process.replica_files;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(files);
    if (it != entries_.end() && it->second.pid == process.pid &&
        it->second.start_time == process.start_time && it->second.cgroup.has_value()) {
      return *it->second.cgroup;
    }
  }
  // Only the cgroup named after this very shim: the file is in a directory the replica can
  // write to.
  std::string cgroup;
  absl::StatusOr<ProcessFile> pf = ReadProcessFile(files);
  if (pf.ok() && pf->pid == process.pid && pf->start_time == process.start_time &&
      absl::EndsWith(pf->cgroup,
                     absl::StrCat("/", ReplicaCgroupName(process.pid, process.start_time)))) {
    cgroup = pf->cgroup;
  }
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(files);
  if (it != entries_.end() && it->second.pid == process.pid &&
      it->second.start_time == process.start_time) {
    it->second.cgroup = cgroup;
  }
  return cgroup;
}

void ReplicaFacts::Forget(const std::string& replica_files) {
  absl::MutexLock lock(&mu_);
  entries_.erase(replica_files);
}

size_t ReplicaFacts::held() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

}  // namespace coach::backend::local
