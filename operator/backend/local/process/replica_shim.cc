// coach-replica-shim: the supervisor each local replica runs under, so that its exit
// status survives the operator (after an operator kill -9 the replica is no longer the
// operator's child and waitpid cannot report it).
//
//   coach-replica-shim --replica-files=B --log=L [--max-log-bytes=N] [--cwd=W]
//                      [--status-fd=F] -- COMMAND ARGS...
//
// The shim's environment is passed to COMMAND unchanged (the runner execs the shim with
// exactly the replica's environment). The shim leads its own session; COMMAND runs in
// its own process group inside it, with stdin from /dev/null and stdout+stderr appended
// to L. B names the shim's files (ReplicaFile in exit_record.h: B=<dir>/<pod>. for
// <dir>/<pod>.process). Once COMMAND started (or failed to), the shim writes B's process file and
// then "pgid <n>\n" on F, and keeps F open until it exits, so that the runner learns of the end
// from the end of file at once rather than by polling. When COMMAND ends (SIGCHLD) it kills
// what is left of its group, writes B's exit file and exits 0. SIGTERM/SIGINT/SIGHUP sent to the
// shim are forwarded to COMMAND's group. While COMMAND runs, L is rotated (copytruncate) whenever
// it exceeds N bytes.

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
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

extern char** environ;

namespace {

using coach::backend::local::ExitRecord;

volatile sig_atomic_t g_child_pgid = 0;

void Forward(int sig) {
  if (g_child_pgid > 0) kill(-g_child_pgid, sig);
}

struct Args {
  std::string replica_files;
  std::string log;
  std::string cwd;
  int64_t max_log_bytes = 0;
  int status_fd = -1;
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

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) {
    fprintf(stderr,
            "usage: coach-replica-shim --replica-files=B --log=L [--max-log-bytes=N] "
            "[--cwd=W] [--status-fd=F] -- COMMAND ARGS...\n");
    return 2;
  }
  if (args.status_fd >= 0) fcntl(args.status_fd, F_SETFD, FD_CLOEXEC);
  setsid();  // EPERM when the runner already made us a session leader: fine.
  signal(SIGPIPE, SIG_IGN);

  int log_fd = open(args.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return Fail(args, absl::StrCat("open log ", args.log, ": ", strerror(errno)));
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) return Fail(args, absl::StrCat("open /dev/null: ", strerror(errno)));
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    return Fail(args, absl::StrCat("pipe: ", strerror(errno)));
  }

  std::vector<std::string> candidates = Candidates(args.command[0]);
  std::vector<char*> cargv;
  for (std::string& s : args.command) cargv.push_back(s.data());
  cargv.push_back(nullptr);

  // Block the forwarded signals across fork so the child starts with default handlers
  // and the parent cannot forward to a group that does not exist yet. SIGCHLD stays
  // blocked in the shim: it waits for it with sigtimedwait (an exit is seen at once, where
  // a poll every 20 ms delayed each replica's end by 10 ms on average).
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
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
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

  coach::backend::local::ProcessFile pf;
  pf.pid = getpid();
  pf.pgid = child;
  absl::StatusOr<coach::backend::local::ProcStat> self =
      coach::backend::local::ReadProcStat(getpid());
  if (self.ok()) pf.start_time = self->start_time;
  (void)coach::backend::local::WriteProcessFile(args.replica_files, pf);
  WriteStatus(args.status_fd, absl::StrCat("pgid ", child, "\n"));

  int status = 0;
  // The log is checked for rotation every 20 ms while the command runs; without a bound
  // the shim only wakes for the command's end (or a forwarded signal).
  const struct timespec wait_for =
      args.max_log_bytes > 0 ? timespec{0, 20 * 1000 * 1000} : timespec{3600, 0};
  while (true) {
    pid_t r = waitpid(child, &status, WNOHANG);
    if (r == child) break;
    if (r < 0 && errno != EINTR) {
      status = -1;
      break;
    }
    (void)coach::backend::local::RotateIfOver(args.log, args.max_log_bytes);
    // Returns on SIGCHLD (pending ones included, so none is missed between the waitpid and
    // here), on the timeout, or with EINTR after a forwarded signal's handler ran.
    (void)sigtimedwait(&child_ended, nullptr, &wait_for);
  }
  // The command is gone; like a container, whatever it left in its group goes too.
  g_child_pgid = 0;
  kill(-child, SIGKILL);
  (void)coach::backend::local::RotateIfOver(args.log, args.max_log_bytes);

  ExitRecord record;
  record.finished_at = coach::Clock::Real()->Now();
  record.pid = pf.pid;
  record.pgid = pf.pgid;
  record.start_time = pf.start_time;
  if (!start_error.empty()) {
    record.exit_code = start_error_code;
    record.message = start_error;
  } else if (status == -1) {
    record.exit_code = 128;
    record.message = absl::StrCat("waitpid: ", strerror(errno));
  } else if (WIFEXITED(status)) {
    record.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    record.signal = WTERMSIG(status);
    record.exit_code = 128 + record.signal;
    record.message =
        absl::StrCat("killed by signal ", record.signal, " (", strsignal(record.signal), ")");
  }
  if (!coach::backend::local::WriteExitRecord(args.replica_files, record).ok()) return 1;
  return 0;
}
