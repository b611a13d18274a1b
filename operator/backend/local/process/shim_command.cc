#include "operator/backend/local/process/shim_command.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "operator/backend/local/process/proc_stat.h"
#include "operator/backend/local/process/replica_cgroup.h"

extern char** environ;

namespace coach::backend::local::shim {
namespace {

volatile sig_atomic_t g_child_pgid = 0;

// A stopped process acts on a signal only once continued: a container runtime's kill ends a
// stopped container too.
void Forward(int sig) {
  if (g_child_pgid > 0) {
    kill(-g_child_pgid, sig);
    kill(-g_child_pgid, SIGCONT);
  }
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

// The child's side of StartCommand's fork. Uses only what was computed before the fork. When
// it cannot exec, writes {stage: 1 chdir, 2 exec; errno} on fds.err for AwaitStart.
[[noreturn]] void ExecCommand(const std::string& cwd, const CommandFds& fds, const Cgroup& cgroup,
                              bool in_cgroup, const std::vector<std::string>& candidates,
                              char* const* argv) {
  if (!in_cgroup && cgroup.go[0] >= 0) {
    close(cgroup.go[1]);
    char c;
    while (read(cgroup.go[0], &c, 1) < 0 && errno == EINTR) {
    }
  }
  setpgid(0, 0);
  signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(fds.null_fd, 0);
  dup2(fds.out[1], 1);
  dup2(fds.out[1], 2);
  int tag_errno[2] = {0, 0};  // {stage: 1 chdir, 2 exec; errno}
  if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
    tag_errno[0] = 1;
    tag_errno[1] = errno;
  } else {
    int saved = ENOENT;
    bool eacces = false;
    for (const std::string& c : candidates) {
      execve(c.c_str(), argv, environ);
      saved = errno;
      if (saved == EACCES) eacces = true;
      // Like execvp: keep searching on ENOENT/ENOTDIR/EACCES, stop on anything else.
      if (saved != ENOENT && saved != ENOTDIR && saved != EACCES) break;
    }
    tag_errno[0] = 2;
    tag_errno[1] = (eacces && (saved == ENOENT || saved == ENOTDIR)) ? EACCES : saved;
  }
  ssize_t ignored = write(fds.err[1], tag_errno, sizeof(tag_errno));
  (void)ignored;
  _exit(127);
}

// The child, created in the cgroup where the kernel can: moving it there afterwards (a write to
// cgroup.procs) holds the hierarchy's lock for an RCU grace period, and so made every replica that
// started beside it wait too, up to tens of milliseconds. Kernels before 5.7, and seccomp filters
// that refuse clone3, get fork and the move. The shim is single-threaded, so the child of the raw
// clone3 may run the same async-signal-safe code as fork's. `in_cgroup` says which happened.
pid_t ForkIntoCgroup(const Cgroup& cgroup, bool* in_cgroup) {
  *in_cgroup = false;
  if (cgroup.dir_fd >= 0) {
    struct clone_args args;
    memset(&args, 0, sizeof(args));
    args.flags = CLONE_INTO_CGROUP;
    args.exit_signal = SIGCHLD;
    args.cgroup = static_cast<uint64_t>(cgroup.dir_fd);
    const long child = syscall(SYS_clone3, &args, sizeof(args));
    if (child >= 0) {
      *in_cgroup = true;
      return static_cast<pid_t>(child);
    }
  }
  return fork();
}

// Puts a forked child in the cgroup, or gives the cgroup up, and lets the child go on.
void JoinCgroup(pid_t child, bool in_cgroup, Cgroup* cgroup, Clock* clock) {
  if (cgroup->dir_fd >= 0) {
    close(cgroup->dir_fd);
    cgroup->dir_fd = -1;
  }
  if (cgroup->dir.empty()) return;
  if (!in_cgroup && !AddToCgroup(cgroup->dir, child).ok()) {
    (void)RemoveCgroup(cgroup->dir, absl::ZeroDuration(), clock);
    cgroup->dir.clear();
  }
  close(cgroup->go[0]);
  close(cgroup->go[1]);  // lets the child go on
}

void ForwardSignals() {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = Forward;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
}

// SIGKILLs every process descended from the shim, and reaps them, until none is left or
// `timeout` passed on `clock`. The shim being the subreaper, a process whose parent died is
// the shim's child, so no child left (ECHILD) means no descendant left. Each round kills what
// /proc shows (a process may fork meanwhile; its child is found in the next round).
bool KillDescendants(Clock* clock, absl::Duration timeout, const sigset_t& child_ended) {
  const absl::Time deadline = clock->Now() + timeout;
  const pid_t self = getpid();
  while (true) {
    pid_t r;
    do {
      r = waitpid(-1, nullptr, WNOHANG);
    } while (r > 0 || (r < 0 && errno == EINTR));
    if (r < 0) return true;  // ECHILD
    for (const ProcStat& p : DescendantsIn(ListProcesses(), self)) {
      if (p.state != 'Z') SignalIfSame(p, SIGKILL);
    }
    if (clock->Now() >= deadline) return false;
    const struct timespec wait_for = {0, 10 * 1000 * 1000};
    (void)sigtimedwait(&child_ended, nullptr, &wait_for);
  }
}

}  // namespace

absl::StatusOr<CommandFds> OpenCommandFds() {
  CommandFds fds;
  fds.null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fds.null_fd < 0) {
    return absl::InternalError(absl::StrCat("open /dev/null: ", strerror(errno)));
  }
  if (pipe2(fds.err, O_CLOEXEC) != 0 || pipe2(fds.out, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  return fds;
}

Cgroup MakeReplicaCgroup(const ProcessFile& shim, Clock* clock) {
  Cgroup cgroup;
  absl::StatusOr<std::string> own = OwnCgroupDir();
  if (!own.ok()) return cgroup;
  std::string dir = absl::StrCat(*own, "/", ReplicaCgroupName(shim.pid, shim.start_time));
  if (!CreateCgroup(dir).ok()) return cgroup;
  if (pipe2(cgroup.go, O_CLOEXEC) == 0) {
    // Without it the child is forked and moved.
    cgroup.dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cgroup.dir = std::move(dir);
  } else {
    (void)RemoveCgroup(dir, absl::ZeroDuration(), clock);
  }
  return cgroup;
}

sigset_t ChildEnded() {
  sigset_t child_ended;
  sigemptyset(&child_ended);
  sigaddset(&child_ended, SIGCHLD);
  return child_ended;
}

absl::StatusOr<pid_t> StartCommand(const std::string& cwd, std::vector<std::string>* command,
                                   const CommandFds& fds, Cgroup* cgroup, Clock* clock) {
  std::vector<std::string> candidates = Candidates((*command)[0]);
  std::vector<char*> cargv;
  for (std::string& s : *command) cargv.push_back(s.data());
  cargv.push_back(nullptr);

  // Block the forwarded signals across fork so the child starts with default handlers
  // and the parent cannot forward to a group that does not exist yet. SIGCHLD stays
  // blocked in the shim: it reads it from a signalfd beside the output pipe.
  sigset_t forwarded, old_mask;
  sigemptyset(&forwarded);
  sigaddset(&forwarded, SIGTERM);
  sigaddset(&forwarded, SIGINT);
  sigaddset(&forwarded, SIGHUP);
  const sigset_t child_ended = ChildEnded();
  sigprocmask(SIG_BLOCK, &child_ended, nullptr);
  sigprocmask(SIG_BLOCK, &forwarded, &old_mask);

  bool in_cgroup = false;
  pid_t child = ForkIntoCgroup(*cgroup, &in_cgroup);
  if (child < 0) return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  if (child == 0) ExecCommand(cwd, fds, *cgroup, in_cgroup, candidates, cargv.data());
  setpgid(child, child);  // Also in the parent: no window where the group is missing.
  JoinCgroup(child, in_cgroup, cgroup, clock);
  g_child_pgid = child;
  ForwardSignals();
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  return child;
}

StartError AwaitStart(const std::string& cwd, const std::string& file, const CommandFds& fds) {
  close(fds.err[1]);
  close(fds.null_fd);
  close(fds.out[1]);
  int tag_errno[2] = {0, 0};
  ssize_t got;
  do {
    got = read(fds.err[0], tag_errno, sizeof(tag_errno));
  } while (got < 0 && errno == EINTR);
  close(fds.err[0]);
  StartError error;
  if (got == static_cast<ssize_t>(sizeof(tag_errno))) {
    int e = tag_errno[1];
    error.exit_code = e == ENOENT || e == ENOTDIR ? 127 : 126;
    error.message = tag_errno[0] == 1 ? absl::StrCat("chdir ", cwd, ": ", strerror(e))
                                      : absl::StrCat("exec ", file, ": ", strerror(e));
  }
  return error;
}

void KillReplica(pid_t child, const std::string& cgroup, Clock* clock) {
  // The command is gone; like a container, whatever it started goes too.
  g_child_pgid = 0;
  kill(-child, SIGKILL);
  if (!cgroup.empty()) (void)KillCgroup(cgroup, absl::Seconds(5), clock);
  KillDescendants(clock, absl::Seconds(5), ChildEnded());
}

}  // namespace coach::backend::local::shim
