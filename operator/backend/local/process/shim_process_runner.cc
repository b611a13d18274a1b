#include "operator/backend/local/process/shim_process_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "operator/backend/local/fs_util.h"
#include "operator/backend/local/process/exit_record.h"
#include "operator/backend/local/process/proc_stat.h"
#include "operator/backend/local/process/replica_cgroup.h"

namespace coach::backend::local {
namespace {

constexpr int kStatusFd = 3;

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

bool IsAbsolute(const std::string& p) { return !p.empty() && p[0] == '/'; }

absl::Status Validate(const ProcessSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return absl::InvalidArgumentError("spec.argv: a command is required");
  }
  if (!IsAbsolute(spec.log_path)) {
    return absl::InvalidArgumentError("spec.log_path: must be an absolute path");
  }
  if (!IsReplicaFilesPrefix(spec.replica_files)) {
    return absl::InvalidArgumentError(
        "spec.replica_files: must be an absolute prefix ending in '.' (<dir>/<pod>.)");
  }
  if (!spec.working_dir.empty() && !IsAbsolute(spec.working_dir)) {
    return absl::InvalidArgumentError("spec.working_dir: must be an absolute path");
  }
  for (const std::string& e : spec.env) {
    if (e.find('=') == std::string::npos || e[0] == '=') {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.env: entry '", e, "' is not NAME=value"));
    }
  }
  return absl::OkStatus();
}

PollResult FromExit(const ExitRecord& r) {
  PollResult p;
  p.state = ProcessState::kExited;
  p.exit_code = r.exit_code;
  p.signal = r.signal;
  p.finished_at = r.finished_at;
  p.message = r.message;
  return p;
}

// Reads the shim's one status line from `fd` until newline, EOF or the deadline (on `clock`).
absl::StatusOr<std::string> ReadStatusLine(int fd, absl::Time deadline, Clock* clock) {
  std::string line;
  while (line.find('\n') == std::string::npos) {
    int64_t ms = absl::ToInt64Milliseconds(deadline - clock->Now());
    if (ms <= 0) return absl::DeadlineExceededError("replica shim did not report a start");
    struct pollfd pfd = {fd, POLLIN, 0};
    int r = poll(&pfd, 1, static_cast<int>(std::min<int64_t>(ms, INT_MAX)));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Errno("poll");
    }
    if (r == 0) continue;
    char buf[512];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("read shim status");
    }
    if (n == 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  return line.substr(0, line.find('\n'));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShimProcessRunner>> ShimProcessRunner::Create(
    const std::string& shim_path, Options options) {
  if (!IsAbsolute(shim_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("replica shim path '", shim_path, "' is not absolute"));
  }
  if (access(shim_path.c_str(), X_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat("replica shim ", shim_path, " is not executable: ", strerror(errno)));
  }
  if (options.replica_cgroups) {
    // The replicas' cgroups are children of the operator's own, where its shims start.
    if (absl::StatusOr<std::string> own = OwnCgroupDir(); own.ok()) {
      RemoveStaleReplicaCgroups(*own);
    }
  }
  return std::unique_ptr<ShimProcessRunner>(new ShimProcessRunner(shim_path, options));
}

absl::StatusOr<ProcessHandle> ShimProcessRunner::Start(const ProcessSpec& spec) {
  RETURN_IF_ERROR(Validate(spec));
  const std::string files_dir = ReplicaFilesDir(spec.replica_files);
  RETURN_IF_ERROR(MakeDirs(files_dir));
  if (const std::string log_dir = DirName(spec.log_path); log_dir != files_dir) {
    RETURN_IF_ERROR(MakeDirs(log_dir));
  }
  for (const char* f : kRunFileNames) {
    std::string p = ReplicaFile(spec.replica_files, f);
    if (unlink(p.c_str()) != 0 && errno != ENOENT) return Errno(absl::StrCat("unlink ", p));
  }

  // Everything the child needs is built before fork: after fork in a multi-threaded
  // process only async-signal-safe calls are allowed.
  std::vector<std::string> args = {
      shim_path_,
      absl::StrCat("--replica-files=", spec.replica_files),
      absl::StrCat("--log=", spec.log_path),
      absl::StrCat("--max-log-bytes=", spec.max_log_bytes),
      absl::StrCat("--cwd=", spec.working_dir.empty() ? files_dir : spec.working_dir),
      absl::StrCat("--status-fd=", kStatusFd)};
  if (!options_.replica_cgroups) args.push_back("--no-cgroup");
  args.push_back("--");
  args.insert(args.end(), spec.argv.begin(), spec.argv.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_copy = spec.env;
  std::vector<char*> envp;
  for (std::string& e : env_copy) envp.push_back(e.data());
  envp.push_back(nullptr);

  int log_fd = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return Errno(absl::StrCat("open ", spec.log_path));
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) {
    close(log_fd);
    return Errno("open /dev/null");
  }
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) != 0) {
    close(log_fd);
    close(null_fd);
    return Errno("pipe");
  }

  // posix_spawn (vfork-like in glibc) instead of fork: the operator is multi-threaded with
  // a sizeable address space, and copying its page tables per replica was a fifth of its
  // CPU time when starting jobs. The child gets its own session, default signal
  // dispositions, an empty mask, fds 0-3 and nothing else of the operator's.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // The three descriptors are at 3 or above (0-2 are the operator's own), and are copied
  // to 0-2 before 3 is overwritten, so no copy clobbers another's source.
  posix_spawn_file_actions_adddup2(&actions, null_fd, 0);
  posix_spawn_file_actions_adddup2(&actions, log_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, log_fd, 2);
  posix_spawn_file_actions_adddup2(&actions, status_pipe[1], kStatusFd);
  posix_spawn_file_actions_addclosefrom_np(&actions, kStatusFd + 1);
  pid_t pid = -1;
  int spawn_error = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (spawn_error != 0) {
    pid = -1;
    errno = spawn_error;
  }
  int fork_errno = errno;
  close(status_pipe[1]);
  close(log_fd);
  close(null_fd);
  if (pid < 0) {
    close(status_pipe[0]);
    errno = fork_errno;
    return Errno(absl::StrCat("starting the replica shim ", shim_path_));
  }
  absl::StatusOr<std::string> line = ReadStatusLine(
      status_pipe[0], options_.clock->Now() + options_.start_timeout, options_.clock);
  if (!line.ok() || !absl::StartsWith(*line, "pgid ")) {
    close(status_pipe[0]);
    // Do not leave a half-started replica behind.
    kill(-pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    if (!line.ok()) return line.status();
    return absl::InternalError(
        absl::StrCat("replica shim failed to start: ", line->empty() ? "no report" : *line));
  }
  absl::StatusOr<ProcessFile> pf = ReadProcessFile(spec.replica_files);
  if (!pf.ok() || pf->pid != pid) {
    close(status_pipe[0]);
    if (!pf.ok()) {
      return absl::InternalError(absl::StrCat("replica shim: ", pf.status().message()));
    }
    return absl::InternalError(
        absl::StrCat("replica shim reported pid ", pf->pid, ", started ", pid));
  }
  // Kept for TakeEndFd: nothing more is written on it; its end of file is the shim's end.
  fcntl(status_pipe[0], F_SETFL, O_NONBLOCK);
  {
    absl::MutexLock lock(&end_fds_mu_);
    auto [it, inserted] = end_fds_.emplace(pid, status_pipe[0]);
    if (!inserted) {  // a recycled pid whose descriptor was never taken
      close(it->second);
      it->second = status_pipe[0];
    }
  }
  ProcessHandle handle;
  handle.pid = pid;
  handle.pgid = pf->pgid;
  handle.start_time = pf->start_time;
  handle.replica_files = spec.replica_files;
  return handle;
}

ShimProcessRunner::~ShimProcessRunner() {
  absl::MutexLock lock(&end_fds_mu_);
  for (const auto& [pid, fd] : end_fds_) close(fd);
}

int ShimProcessRunner::TakeEndFd(const ProcessHandle& handle) {
  absl::MutexLock lock(&end_fds_mu_);
  auto it = end_fds_.find(handle.pid);
  if (it == end_fds_.end()) return -1;
  const int fd = it->second;
  end_fds_.erase(it);
  return fd;
}

absl::Status ShimProcessRunner::Signal(const ProcessHandle& handle, int sig) {
  if (!IsSameLiveProcess(handle.pid, handle.start_time)) {
    return absl::NotFoundError(absl::StrCat("replica supervisor ", handle.pid, " is not running"));
  }
  if (kill(-handle.pgid, sig) != 0) {
    if (errno == ESRCH) {
      return absl::NotFoundError(absl::StrCat("replica process group ", handle.pgid, " is gone"));
    }
    return Errno(absl::StrCat("kill -", handle.pgid));
  }
  return absl::OkStatus();
}

absl::StatusOr<PollResult> ShimProcessRunner::Poll(const ProcessHandle& handle) {
  // Reap the shim when it is our child (started by this process); for adopted
  // replicas this is ECHILD and harmless.
  int shim_status = 0;
  bool reaped = handle.pid > 0 && waitpid(handle.pid, &shim_status, WNOHANG) == handle.pid;
  absl::StatusOr<ExitRecord> exit = ReadExitRecord(handle.replica_files);
  if (exit.ok()) return FromExit(*exit);
  if (!absl::IsNotFound(exit.status())) return exit.status();
  if (IsSameLiveProcess(handle.pid, handle.start_time)) return PollResult();
  // The shim may have written its exit file between the two looks.
  exit = ReadExitRecord(handle.replica_files);
  if (exit.ok()) return FromExit(*exit);
  if (!absl::IsNotFound(exit.status())) return exit.status();
  // A shim that ended after the first waitpid is a zombie now: reap it here, or its own
  // exit status (why nothing was recorded) is lost to this poll.
  if (!reaped && handle.pid > 0) reaped = waitpid(handle.pid, &shim_status, WNOHANG) == handle.pid;
  PollResult vanished;
  vanished.state = ProcessState::kVanished;
  if (reaped && WIFEXITED(shim_status) && WEXITSTATUS(shim_status) == kShimExitNotRecorded) {
    vanished.message = absl::StrCat(
        "the replica ended, but its supervisor could not record how (no space left or an I/O "
        "error in ",
        ReplicaFilesDir(handle.replica_files), "; its log ends with the replica's output)");
  } else {
    vanished.message = absl::StrCat("replica supervisor (pid ", handle.pid,
                                    ") is gone without recording an exit status");
  }
  return vanished;
}

absl::StatusOr<PollResult> ShimProcessRunner::WaitEnded(const ProcessHandle& handle,
                                                        absl::Duration timeout) {
  absl::Time deadline = options_.clock->Now() + timeout;
  while (true) {
    ASSIGN_OR_RETURN(PollResult p, Poll(handle));
    if (p.state != ProcessState::kRunning) return p;
    if (options_.clock->Now() >= deadline) return p;
    absl::SleepFor(absl::Milliseconds(10));
  }
}

int ShimProcessRunner::SignalLeftovers(const ProcessHandle& handle, int sig) {
  if (handle.pid <= 0 || handle.pgid <= 0) return 0;
  int n = 0;
  for (pid_t p : ListGroupMembers(handle.pgid, handle.pid)) {
    if (kill(p, sig) == 0) ++n;
  }
  return n;
}

absl::Status ShimProcessRunner::KillLeftoverCgroup(const ProcessHandle& handle) {
  absl::StatusOr<ProcessFile> pf = ReadProcessFile(handle.replica_files);
  // Only the cgroup named after this very shim: the file is the replica's to write over,
  // and cgroup.kill on any other would end whatever is in it.
  if (!pf.ok() || pf->cgroup.empty() || pf->pid != handle.pid ||
      pf->start_time != handle.start_time ||
      !absl::EndsWith(pf->cgroup,
                      absl::StrCat("/", ReplicaCgroupName(handle.pid, handle.start_time)))) {
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(KillCgroup(pf->cgroup, options_.kill_timeout, options_.clock));
  return RemoveCgroup(pf->cgroup, options_.kill_timeout, options_.clock);
}

absl::StatusOr<PollResult> ShimProcessRunner::Stop(const ProcessHandle& handle,
                                                   absl::Duration grace) {
  if (IsSameLiveProcess(handle.pid, handle.start_time)) {
    if (kill(-handle.pgid, SIGTERM) != 0 && errno != ESRCH) {
      return Errno(absl::StrCat("kill -TERM -", handle.pgid));
    }
    // A stopped process acts on SIGTERM only once continued (as a container runtime's kill
    // does); without this a stopped replica would wait out the whole grace.
    kill(-handle.pgid, SIGCONT);
    ASSIGN_OR_RETURN(PollResult p, WaitEnded(handle, grace));
    if (p.state != ProcessState::kRunning) return p;
    kill(-handle.pgid, SIGKILL);
    ASSIGN_OR_RETURN(p, WaitEnded(handle, options_.kill_timeout));
    if (p.state != ProcessState::kRunning) return p;
    // The group is dead or unkillable, yet the shim lingers: end the shim too.
    kill(handle.pid, SIGKILL);
    ASSIGN_OR_RETURN(p, WaitEnded(handle, options_.kill_timeout));
    if (p.state == ProcessState::kRunning) {
      return absl::DeadlineExceededError(absl::StrCat("replica ", handle.pid, " survived SIGKILL"));
    }
    SignalLeftovers(handle, SIGKILL);
    RETURN_IF_ERROR(KillLeftoverCgroup(handle));
    return p;
  }
  // The supervisor is gone; its group may not be (the shim was killed on its own), nor
  // its cgroup, which also holds what left the group: the group gets its grace first.
  if (SignalLeftovers(handle, SIGTERM) > 0) {
    SignalLeftovers(handle, SIGCONT);
    absl::Time deadline = options_.clock->Now() + grace;
    while (!ListGroupMembers(handle.pgid, handle.pid).empty() && options_.clock->Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    SignalLeftovers(handle, SIGKILL);
    deadline = options_.clock->Now() + options_.kill_timeout;
    while (!ListGroupMembers(handle.pgid, handle.pid).empty()) {
      if (options_.clock->Now() >= deadline) {
        return absl::DeadlineExceededError(
            absl::StrCat("replica group ", handle.pgid, " survived SIGKILL"));
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
  }
  RETURN_IF_ERROR(KillLeftoverCgroup(handle));
  return Poll(handle);
}

absl::StatusOr<ProcessHandle> ShimProcessRunner::Recover(const std::string& replica_files) {
  absl::StatusOr<ProcessFile> read = ReadProcessFile(replica_files);
  // Written in place: a shim may be writing it right now. A second look a moment later
  // tells that from a file left half written by a shim killed while writing.
  for (int i = 0; i < 50 && absl::IsInvalidArgument(read.status()); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
    read = ReadProcessFile(replica_files);
  }
  if (absl::IsNotFound(read.status())) {
    // The process file is not synced; the exit file is and names the same process: a
    // replica that ended before a power cut is adopted with its exit, not started again.
    absl::StatusOr<ExitRecord> exit = ReadExitRecord(replica_files);
    if (exit.ok() && exit->pid != 0) {
      ProcessFile from_exit;
      from_exit.pid = exit->pid;
      from_exit.pgid = exit->pgid;
      from_exit.start_time = exit->start_time;
      read = from_exit;
    }
  }
  if (!read.ok()) return read.status();
  const ProcessFile& pf = *read;
  ProcessHandle handle;
  handle.pid = pf.pid;
  handle.pgid = pf.pgid;
  handle.start_time = pf.start_time;
  handle.replica_files = replica_files;
  return handle;
}

}  // namespace coach::backend::local
