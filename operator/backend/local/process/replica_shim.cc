// coach-replica-shim: the supervisor each local replica runs under, so that its exit
// status survives the operator (after an operator kill -9 the replica is no longer the
// operator's child and waitpid cannot report it).
//
//   coach-replica-shim --replica-files=B --log=L [--max-log-bytes=N] [--cwd=W]
//                      [--status-fd=F] [--no-cgroup] -- COMMAND ARGS...
//
// The shim's environment is passed to COMMAND unchanged (the runner execs the shim with
// exactly the replica's environment). The shim leads its own session; COMMAND runs in
// its own process group inside it, with stdin from /dev/null and stdout+stderr on a pipe
// that the shim copies to L (LogWriter: at most N bytes in L and N in L.1, the newest kept).
// B names the shim's files (ReplicaFile in exit_record.h: B=<dir>/<pod>. for <dir>/<pod>.process).
// Once COMMAND started (or failed to), the shim writes B's process file and then "pgid <n>\n"
// on F, and keeps F open until it exits, so that the runner learns of the end from the end of
// file at once rather than by polling. SIGTERM/SIGINT/SIGHUP sent to the shim are forwarded
// to COMMAND's group, each followed by SIGCONT so that a stopped process acts on it.
//
// The coach-metric lines in COMMAND's output are the replica's progress, which the shim keeps
// in B's progress file (progress_writer.h).
//
// Every process COMMAND starts dies with it, also those that left its group or session: the
// shim is their subreaper (orphans are re-parented to it, not to init), and, unless
// --no-cgroup or the host does not let it, COMMAND runs in a cgroup of its own
// (replica_cgroup.h). When COMMAND ends, the shim kills its group, the cgroup, and every
// process still descended from the shim, until none is left; then it copies what is still in
// the pipe to L, writes B's progress file (when the replica reported any), then B's exit file,
// and exits 0. So the exit file, once there, follows the last line of the log, the last
// progress and the end of every process of the replica.

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "operator/backend/local/process/exit_record.h"
#include "operator/backend/local/process/log_files.h"
#include "operator/backend/local/process/proc_stat.h"
#include "operator/backend/local/process/progress_writer.h"
#include "operator/backend/local/process/replica_cgroup.h"

extern char** environ;

namespace {

using coach::backend::local::ExitRecord;
using coach::backend::local::LogWriter;
using coach::backend::local::ProcStat;
using coach::backend::local::ProgressWriter;

volatile sig_atomic_t g_child_pgid = 0;

// A stopped process acts on a signal only once continued: a container runtime's kill ends a
// stopped container too.
void Forward(int sig) {
  if (g_child_pgid > 0) {
    kill(-g_child_pgid, sig);
    kill(-g_child_pgid, SIGCONT);
  }
}

struct Args {
  std::string replica_files;
  std::string log;
  std::string cwd;
  int64_t max_log_bytes = 0;
  int status_fd = -1;
  bool cgroup = true;
  std::vector<std::string> command;
};

bool ParseArgs(int argc, char** argv, Args* args) {
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    auto value = [&a](const char* flag) { return a.substr(strlen(flag)); };
    if (absl::StartsWith(a, "--replica-files=")) {
      args->replica_files = value("--replica-files=");
    } else if (absl::StartsWith(a, "--log=")) {
      args->log = value("--log=");
    } else if (absl::StartsWith(a, "--cwd=")) {
      args->cwd = value("--cwd=");
    } else if (absl::StartsWith(a, "--max-log-bytes=")) {
      if (!absl::SimpleAtoi(value("--max-log-bytes="), &args->max_log_bytes)) return false;
    } else if (absl::StartsWith(a, "--status-fd=")) {
      if (!absl::SimpleAtoi(value("--status-fd="), &args->status_fd)) return false;
    } else if (a == "--no-cgroup") {
      args->cgroup = false;
    } else {
      return false;
    }
  }
  for (; i < argc; ++i) args->command.push_back(argv[i]);
  return !args->replica_files.empty() && !args->log.empty() && !args->command.empty();
}

// execvpe's lookup, but against the PATH of the environment we pass on, computed before
// fork. A name with a '/' is used as is.
std::vector<std::string> Candidates(const std::string& file) {
  if (file.find('/') != std::string::npos) return {file};
  const char* path = getenv("PATH");
  std::string search = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::vector<std::string> out;
  for (absl::string_view dir : absl::StrSplit(search, ':')) {
    std::string d(dir);
    out.push_back(absl::StrCat(d.empty() ? "." : d, "/", file));
  }
  return out;
}

void WriteStatus(int fd, const std::string& line) {
  if (fd < 0) return;
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
}

int Fail(const Args& args, const std::string& message) {
  ExitRecord r;
  r.exit_code = 127;
  r.finished_at = coach::Clock::Real()->Now();
  r.message = message;
  (void)coach::backend::local::WriteExitRecord(args.replica_files, r);
  WriteStatus(args.status_fd, absl::StrCat("error ", message, "\n"));
  return 1;  // exiting closes the status fd
}

// The command's stdout and stderr: the read end of a pipe, copied into the log as it comes.
// Reading it is what bounds the log at any rate (a writer faster than the disk waits on a
// full pipe) and what keeps the shim's memory to one buffer.
struct Output {
  int fd;
  LogWriter* log;
  ProgressWriter* progress;
  bool eof = false;
  int64_t rotations_seen = 0;

  // Copies what the pipe holds, at most `max_reads` reads of it, so that a writer that never
  // pauses does not keep the shim from noticing the command's end.
  void Copy(int max_reads) {
    static char buf[1 << 16];
    for (int i = 0; i < max_reads && !eof; ++i) {
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return;  // EAGAIN: empty for now
      if (n == 0) {
        eof = true;
        return;
      }
      const absl::string_view bytes(buf, static_cast<size_t>(n));
      // A failed write (a full disk) drops these bytes; the next ones are tried again.
      (void)log->Write(bytes);
      progress->Feed(bytes);
      if (log->rotations() != rotations_seen) {
        // The shim's own stdout and stderr (what the runner gave it) follow the live file.
        rotations_seen = log->rotations();
        dup2(log->fd(), 1);
        dup2(log->fd(), 2);
      }
    }
  }

  // Copies until the end of file, or until nothing came for `timeout` on `clock`.
  void Drain(coach::Clock* clock, absl::Duration timeout) {
    absl::Time deadline = clock->Now() + timeout;
    while (!eof) {
      Copy(64);
      if (eof) return;
      const int64_t ms = absl::ToInt64Milliseconds(deadline - clock->Now());
      if (ms <= 0) return;
      struct pollfd p = {fd, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, 100))) > 0) {
        deadline = clock->Now() + timeout;
      }
    }
  }
};

// SIGKILLs every process descended from the shim, and reaps them, until none is left or
// `timeout` passed on `clock`. The shim being the subreaper, a process whose parent died is
// the shim's child, so no child left (ECHILD) means no descendant left. Each round kills what
// /proc shows (a process may fork meanwhile; its child is found in the next round).
bool KillDescendants(coach::Clock* clock, absl::Duration timeout, const sigset_t& child_ended) {
  const absl::Time deadline = clock->Now() + timeout;
  const pid_t self = getpid();
  while (true) {
    pid_t r;
    do {
      r = waitpid(-1, nullptr, WNOHANG);
    } while (r > 0 || (r < 0 && errno == EINTR));
    if (r < 0) return true;  // ECHILD
    for (const ProcStat& p :
         coach::backend::local::DescendantsIn(coach::backend::local::ListProcesses(), self)) {
      if (p.state != 'Z') coach::backend::local::SignalIfSame(p, SIGKILL);
    }
    if (clock->Now() >= deadline) return false;
    const struct timespec wait_for = {0, 10 * 1000 * 1000};
    (void)sigtimedwait(&child_ended, nullptr, &wait_for);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) {
    fprintf(stderr,
            "usage: coach-replica-shim --replica-files=B --log=L [--max-log-bytes=N] "
            "[--cwd=W] [--status-fd=F] [--no-cgroup] -- COMMAND ARGS...\n");
    return 2;
  }
  coach::Clock* const clock = coach::Clock::Real();
  if (args.status_fd >= 0) fcntl(args.status_fd, F_SETFD, FD_CLOEXEC);
  setsid();  // EPERM when the runner already made us a session leader: fine.
  signal(SIGPIPE, SIG_IGN);
  // Orphans of the replica's processes become the shim's children instead of init's, so
  // that a process that left the group (setsid, a double fork) is still found at the end.
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

  absl::StatusOr<std::unique_ptr<LogWriter>> log = LogWriter::Open(args.log, args.max_log_bytes);
  if (!log.ok()) return Fail(args, std::string(log.status().message()));
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) return Fail(args, absl::StrCat("open /dev/null: ", strerror(errno)));
  int err_pipe[2];
  int out_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) {
    return Fail(args, absl::StrCat("pipe: ", strerror(errno)));
  }

  coach::backend::local::ProcessFile pf;
  pf.pid = getpid();
  absl::StatusOr<coach::backend::local::ProcStat> self =
      coach::backend::local::ReadProcStat(getpid());
  if (self.ok()) pf.start_time = self->start_time;

  // The replica's cgroup, when the host lets us make one. The child waits on `go` until
  // it is in it, so that nothing it starts can begin outside.
  std::string cgroup;
  int go_pipe[2] = {-1, -1};
  if (args.cgroup) {
    absl::StatusOr<std::string> own = coach::backend::local::OwnCgroupDir();
    if (own.ok()) {
      std::string dir =
          absl::StrCat(*own, "/", coach::backend::local::ReplicaCgroupName(pf.pid, pf.start_time));
      if (coach::backend::local::CreateCgroup(dir).ok()) {
        if (pipe2(go_pipe, O_CLOEXEC) == 0) {
          cgroup = std::move(dir);
        } else {
          (void)coach::backend::local::RemoveCgroup(dir, absl::ZeroDuration(), clock);
        }
      }
    }
  }

  std::vector<std::string> candidates = Candidates(args.command[0]);
  std::vector<char*> cargv;
  for (std::string& s : args.command) cargv.push_back(s.data());
  cargv.push_back(nullptr);

  // Block the forwarded signals across fork so the child starts with default handlers
  // and the parent cannot forward to a group that does not exist yet. SIGCHLD stays
  // blocked in the shim: it reads it from a signalfd beside the output pipe.
  sigset_t forwarded, old_mask, child_ended;
  sigemptyset(&forwarded);
  sigaddset(&forwarded, SIGTERM);
  sigaddset(&forwarded, SIGINT);
  sigaddset(&forwarded, SIGHUP);
  sigemptyset(&child_ended);
  sigaddset(&child_ended, SIGCHLD);
  sigprocmask(SIG_BLOCK, &child_ended, nullptr);
  sigprocmask(SIG_BLOCK, &forwarded, &old_mask);

  pid_t child = fork();
  if (child < 0) return Fail(args, absl::StrCat("fork: ", strerror(errno)));
  if (child == 0) {
    if (go_pipe[0] >= 0) {
      close(go_pipe[1]);
      char c;
      while (read(go_pipe[0], &c, 1) < 0 && errno == EINTR) {
      }
    }
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(null_fd, 0);
    dup2(out_pipe[1], 1);
    dup2(out_pipe[1], 2);
    int tag_errno[2] = {0, 0};  // {stage: 1 chdir, 2 exec; errno}
    if (!args.cwd.empty() && chdir(args.cwd.c_str()) != 0) {
      tag_errno[0] = 1;
      tag_errno[1] = errno;
    } else {
      int saved = ENOENT;
      bool eacces = false;
      for (const std::string& c : candidates) {
        execve(c.c_str(), cargv.data(), environ);
        saved = errno;
        if (saved == EACCES) eacces = true;
        // Like execvp: keep searching on ENOENT/ENOTDIR/EACCES, stop on anything else.
        if (saved != ENOENT && saved != ENOTDIR && saved != EACCES) break;
      }
      tag_errno[0] = 2;
      tag_errno[1] = (eacces && (saved == ENOENT || saved == ENOTDIR)) ? EACCES : saved;
    }
    ssize_t ignored = write(err_pipe[1], tag_errno, sizeof(tag_errno));
    (void)ignored;
    _exit(127);
  }
  setpgid(child, child);  // Also in the parent: no window where the group is missing.
  if (!cgroup.empty()) {
    if (!coach::backend::local::AddToCgroup(cgroup, child).ok()) {
      (void)coach::backend::local::RemoveCgroup(cgroup, absl::ZeroDuration(), clock);
      cgroup.clear();
    }
    close(go_pipe[0]);
    close(go_pipe[1]);  // lets the child go on
  }
  g_child_pgid = child;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = Forward;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);

  close(err_pipe[1]);
  close(null_fd);
  close(out_pipe[1]);
  int tag_errno[2] = {0, 0};
  ssize_t got;
  do {
    got = read(err_pipe[0], tag_errno, sizeof(tag_errno));
  } while (got < 0 && errno == EINTR);
  close(err_pipe[0]);
  std::string start_error;
  int start_error_code = 0;
  if (got == static_cast<ssize_t>(sizeof(tag_errno))) {
    int e = tag_errno[1];
    start_error_code = e == ENOENT || e == ENOTDIR ? 127 : 126;
    start_error = tag_errno[0] == 1 ? absl::StrCat("chdir ", args.cwd, ": ", strerror(e))
                                    : absl::StrCat("exec ", args.command[0], ": ", strerror(e));
  }

  pf.pgid = child;
  pf.cgroup = cgroup;
  (void)coach::backend::local::WriteProcessFile(args.replica_files, pf);
  WriteStatus(args.status_fd, absl::StrCat("pgid ", child, "\n"));

  ProgressWriter progress(args.replica_files, clock);
  Output output{out_pipe[0], log->get(), &progress};
  fcntl(output.fd, F_SETFL, O_NONBLOCK);
  const int child_fd = signalfd(-1, &child_ended, SFD_NONBLOCK | SFD_CLOEXEC);
  int status = 0;
  bool ended = false;
  bool wait_failed = false;
  while (!ended) {
    // Without a signalfd (never seen), SIGCHLD is looked for every 20 ms. A pending progress
    // write bounds the wait too.
    int timeout_ms = child_fd >= 0 ? -1 : 20;
    if (std::optional<absl::Duration> due = progress.UntilDue(); due.has_value()) {
      const int due_ms =
          static_cast<int>(absl::ToInt64Milliseconds(absl::Ceil(*due, absl::Milliseconds(1))));
      timeout_ms = timeout_ms < 0 ? due_ms : std::min(timeout_ms, due_ms);
    }
    struct pollfd fds[2] = {{output.eof ? -1 : output.fd, POLLIN, 0}, {child_fd, POLLIN, 0}};
    if (poll(fds, 2, timeout_ms) < 0 && errno != EINTR) {
      struct timespec pause = {0, 20 * 1000 * 1000};  // ENOMEM: try again shortly
      nanosleep(&pause, nullptr);
    }
    if (fds[0].revents != 0) output.Copy(/*max_reads=*/16);
    progress.WriteIfDue();
    if (fds[1].revents != 0) {
      struct signalfd_siginfo info;
      while (read(child_fd, &info, sizeof(info)) > 0) {
      }
    }
    // Reaps the command and any orphan that was re-parented to the shim and ended.
    while (true) {
      int st = 0;
      pid_t r = waitpid(-1, &st, WNOHANG);
      if (r == child) status = st, ended = true;
      if (r > 0) continue;
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && !ended) wait_failed = ended = true;
      break;
    }
  }
  const int wait_errno = errno;
  if (child_fd >= 0) close(child_fd);

  // The command is gone; like a container, whatever it started goes too.
  g_child_pgid = 0;
  kill(-child, SIGKILL);
  if (!cgroup.empty()) (void)coach::backend::local::KillCgroup(cgroup, absl::Seconds(5), clock);
  KillDescendants(clock, absl::Seconds(5), child_ended);
  // Every writer is gone now, so the pipe ends after what they wrote. One that is not (a
  // descriptor passed to a process outside the replica) is waited for only briefly.
  output.Drain(clock, absl::Seconds(2));
  close(output.fd);
  // Before the exit file: once that is there, the progress file is final.
  progress.Flush();

  ExitRecord record;
  record.finished_at = clock->Now();
  record.pid = pf.pid;
  record.pgid = pf.pgid;
  record.start_time = pf.start_time;
  if (!start_error.empty()) {
    record.exit_code = start_error_code;
    record.message = start_error;
  } else if (wait_failed) {
    record.exit_code = 128;
    record.message = absl::StrCat("waitpid: ", strerror(wait_errno));
  } else if (WIFEXITED(status)) {
    record.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    record.signal = WTERMSIG(status);
    record.exit_code = 128 + record.signal;
    record.message =
        absl::StrCat("killed by signal ", record.signal, " (", strsignal(record.signal), ")");
  }
  const bool recorded = coach::backend::local::WriteExitRecord(args.replica_files, record).ok();
  // After the record, which the runner waits for; the cgroup is empty already. One left by a
  // shim killed before this is removed by the runner (Stop, or its next Create).
  if (!cgroup.empty()) {
    (void)coach::backend::local::RemoveCgroup(cgroup, absl::Seconds(1), clock);
  }
  if (!recorded) {
    std::fprintf(stderr, "coach-replica-shim: cannot write the exit record in %s (exit code %d)\n",
                 args.replica_files.c_str(), record.exit_code);
  }
  return recorded ? 0 : coach::backend::local::kShimExitNotRecorded;
}
