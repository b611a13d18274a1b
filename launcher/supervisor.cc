#include "launcher/supervisor.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace coach::launcher {
namespace {

using Clock = std::chrono::steady_clock;

void NoopHandler(int) {}

// Everything execvpe needs, built before fork() so the child only makes syscalls.
struct PreparedExec {
  int stdout_fd = -1;
  int stderr_fd = -1;
  std::vector<std::string> env_strings;
  std::vector<char*> argv;
  std::vector<char*> envp;
};

PreparedExec Prepare(const WorkerSpec& spec) {
  PreparedExec p;
  p.stdout_fd = spec.stdout_fd;
  p.stderr_fd = spec.stderr_fd;
  for (const auto& [k, v] : spec.env) p.env_strings.push_back(k + "=" + v);
  for (const std::string& a : spec.argv) p.argv.push_back(const_cast<char*>(a.c_str()));
  p.argv.push_back(nullptr);
  for (std::string& e : p.env_strings) p.envp.push_back(e.data());
  p.envp.push_back(nullptr);
  return p;
}

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n <= 0 && errno != EINTR) return;
    if (n > 0) off += static_cast<size_t>(n);
  }
}

struct Running {
  pid_t pid;
  size_t index;
  Clock::time_point started;
};

class Run {
 public:
  Run(const std::vector<WorkerSpec>& workers, const SupervisorOptions& options)
      : workers_(workers), options_(options) {}

  SupervisionResult Go(const sigset_t& child_mask) {
    const pid_t parent = getpid();
    for (size_t i = 0; i < workers_.size(); ++i) {
      PreparedExec exec = Prepare(workers_[i]);
      // A pending SIGTERM or stop request must not start more workers only to stop them.
      CheckStopRequest();
      if (stopping_) break;
      const pid_t pid = fork();
      if (pid < 0) {
        Log(absl::StrCat("coach-launch: fork for rank ", workers_[i].rank,
                         " failed: ", std::strerror(errno)));
        RecordFailure(1);
        break;
      }
      if (pid == 0) Child(exec, parent, child_mask, workers_[i].argv[0]);
      setpgid(pid, pid);  // also done in the child; whichever runs first wins the race
      running_.push_back({pid, i, Clock::now()});
      PollSignals();
    }
    while (!running_.empty()) Wait();
    if (failure_code_) {
      result_.exit_code = *failure_code_;
    } else if (result_.received_signal != 0) {
      result_.exit_code = 128 + result_.received_signal;
    } else if (result_.stopped_on_request) {
      result_.exit_code = 128 + SIGTERM;
    }
    return result_;
  }

 private:
  [[noreturn]] static void Child(PreparedExec& exec, pid_t parent, const sigset_t& mask,
                                 const std::string& program) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the launcher died before prctl took effect
    sigprocmask(SIG_SETMASK, &mask, nullptr);
    if (exec.stdout_fd >= 0 && dup2(exec.stdout_fd, STDOUT_FILENO) < 0) _exit(126);
    if (exec.stderr_fd >= 0 && dup2(exec.stderr_fd, STDERR_FILENO) < 0) _exit(126);
    execvpe(exec.argv[0], exec.argv.data(), exec.envp.data());
    const int err = errno;
    WriteAll(STDERR_FILENO,
             "coach-launch: cannot execute " + program + ": " + std::strerror(err) + "\n");
    _exit(err == ENOENT ? 127 : 126);
  }

  void Log(const std::string& line) {
    if (options_.log) {
      options_.log(line);
    } else {
      WriteAll(STDERR_FILENO, line + "\n");
    }
  }

  void SignalAll(int sig) {
    for (const Running& r : running_) kill(-r.pid, sig);
  }

  // `sig`, then SIGCONT: a stopped process (SIGSTOP, a debugger) acts on nothing but SIGKILL
  // until it is continued.
  void StopAll(int sig) {
    SignalAll(sig);
    SignalAll(SIGCONT);
  }

  void BeginStopping() {
    if (stopping_) return;
    stopping_ = true;
    kill_at_ = Clock::now() + absl::ToChronoNanoseconds(options_.grace_period);
    StopAll(SIGTERM);
  }

  void RecordFailure(int code) {
    if (!failure_code_) failure_code_ = code;
    BeginStopping();
  }

  void CheckStopRequest() {
    if (options_.stop == nullptr || stopping_) return;
    std::optional<std::string> why = options_.stop->Requested();
    if (!why) return;
    result_.stopped_on_request = true;
    Log(absl::StrCat("coach-launch: ", *why, "; stopping ", running_.size(), " worker(s) (grace ",
                     absl::FormatDuration(options_.grace_period), ")"));
    BeginStopping();
  }

  void OnSignal(int sig) {
    if (sig == SIGCHLD) return;
    if (held_ == 0 && !hold_begun_ && !stopping_ && options_.hold != nullptr) {
      hold_begun_ = true;
      if (std::optional<std::string> why = options_.hold->Begin(sig)) {
        held_ = sig;
        Log(absl::StrCat("coach-launch: got ", strsignal(sig), "; ", *why));
        return;
      }
    }
    held_ = 0;  // a second signal is not held
    PassOn(sig);
  }

  // The held signal goes on once its hold ends.
  void CheckHold() {
    if (held_ == 0 || options_.hold->Holding()) return;
    const int sig = std::exchange(held_, 0);
    if (stopping_) return;  // the workers are stopping already (one failed)
    PassOn(sig);
  }

  void PassOn(int sig) {
    if (result_.received_signal == 0) result_.received_signal = sig;
    Log(absl::StrCat("coach-launch: got ", strsignal(sig), ", stopping ", running_.size(),
                     " worker(s) (grace ", absl::FormatDuration(options_.grace_period), ")"));
    if (!stopping_) {
      stopping_ = true;
      kill_at_ = Clock::now() + absl::ToChronoNanoseconds(options_.grace_period);
    }
    StopAll(sig);  // forward what we got (SIGINT stays SIGINT), every time we get it
  }

  // Consumes signals already pending, without waiting.
  void PollSignals() {
    sigset_t set = WatchedSet();
    timespec zero{0, 0};
    for (;;) {
      int sig = sigtimedwait(&set, nullptr, &zero);
      if (sig <= 0) break;
      OnSignal(sig);
    }
    Reap();
  }

  void Wait() {
    sigset_t set = WatchedSet();
    timespec ts{};
    timespec* timeout = nullptr;
    if (stopping_ && !killed_) {
      auto left = kill_at_ - Clock::now();
      if (left <= Clock::duration::zero()) {
        Log(absl::StrCat("coach-launch: grace period over, killing ", running_.size(),
                         " worker(s)"));
        SignalAll(SIGKILL);
        killed_ = true;
      } else {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        ts.tv_sec = ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        timeout = &ts;
      }
    } else if (!stopping_ &&
               (options_.stop != nullptr || options_.signals != nullptr || held_ != 0)) {
      ts = absl::ToTimespec(std::max(options_.stop_poll, absl::Milliseconds(1)));
      timeout = &ts;
    }
    // Reap first: a SIGCHLD consumed by PollSignals may have left exits unreaped.
    Reap();
    if (running_.empty()) return;
    int sig = sigtimedwait(&set, nullptr, timeout);
    if (sig > 0) OnSignal(sig);
    Reap();
    CheckStopRequest();
    SendWorkerSignals();
    CheckHold();
  }

  // Here, on the thread that reaps: a worker in running_ is alive or a zombie, so its pid is
  // still its own.
  void SendWorkerSignals() {
    if (options_.signals == nullptr) return;
    for (const WorkerSignals::Pending& p : options_.signals->Take()) {
      if (stopping_) continue;
      const Running* target = nullptr;
      for (const Running& r : running_) {
        if (workers_[r.index].local_rank == p.local_rank && r.pid == p.pid) target = &r;
      }
      if (target == nullptr) {
        Log(absl::StrCat("coach-launch: ", p.why, ": local rank ", p.local_rank,
                         " does not run as pid ", p.pid, "; not signalled"));
        continue;
      }
      kill(p.pid, p.signal);
      Log(absl::StrCat("coach-launch: ", p.why, ": SIG", sigabbrev_np(p.signal), " to rank ",
                       workers_[target->index].rank, " (local ", p.local_rank, ", pid ", p.pid,
                       ")"));
    }
  }

  void Reap() {
    for (size_t i = 0; i < running_.size();) {
      int status = 0;
      pid_t r = waitpid(running_[i].pid, &status, WNOHANG);
      if (r == 0 || (r < 0 && errno == EINTR)) {
        ++i;
        continue;
      }
      const Running done = running_[i];
      running_.erase(running_.begin() + static_cast<long>(i));
      WorkerExit exit;
      exit.rank = workers_[done.index].rank;
      exit.local_rank = workers_[done.index].local_rank;
      exit.duration = absl::FromChrono(Clock::now() - done.started);
      if (r < 0) {
        exit.exit_code = 1;  // ECHILD: someone else reaped it; treat as a failure
      } else if (WIFSIGNALED(status)) {
        exit.term_signal = WTERMSIG(status);
        exit.exit_code = 128 + exit.term_signal;
      } else {
        exit.exit_code = WEXITSTATUS(status);
      }
      std::string how = exit.term_signal != 0
                            ? absl::StrCat("killed by signal ", exit.term_signal, " (",
                                           strsignal(exit.term_signal), "), code ", exit.exit_code)
                            : absl::StrCat("exited with code ", exit.exit_code);
      Log(absl::StrFormat("coach-launch: rank %d (local %d, pid %d) %s after %.3fs", exit.rank,
                          exit.local_rank, done.pid, how, absl::ToDoubleSeconds(exit.duration)));
      result_.exits.push_back(exit);
      // Workers stopped on request end by the stop, not by a failure of their own.
      if (exit.exit_code != 0 && !result_.stopped_on_request) RecordFailure(exit.exit_code);
    }
  }

  static sigset_t WatchedSet() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    return set;
  }

  const std::vector<WorkerSpec>& workers_;
  const SupervisorOptions& options_;
  std::vector<Running> running_;
  SupervisionResult result_;
  std::optional<int> failure_code_;
  bool stopping_ = false;
  int held_ = 0;  // a signal held back from the workers (options_.hold)
  bool hold_begun_ = false;
  bool killed_ = false;
  Clock::time_point kill_at_;
};

}  // namespace

void StopRequest::Request(const std::string& why) {
  absl::MutexLock lock(&mu_);
  if (!why_) why_ = why;
}

std::optional<std::string> StopRequest::Requested() const {
  absl::MutexLock lock(&mu_);
  return why_;
}

void WorkerSignals::Send(int local_rank, pid_t pid, int signal, std::string why) {
  absl::MutexLock lock(&mu_);
  pending_.push_back({local_rank, pid, signal, std::move(why)});
}

std::vector<WorkerSignals::Pending> WorkerSignals::Take() {
  absl::MutexLock lock(&mu_);
  return std::exchange(pending_, {});
}

absl::StatusOr<SupervisionResult> Supervise(const std::vector<WorkerSpec>& workers,
                                            const SupervisorOptions& options) {
  if (workers.empty()) return absl::InvalidArgumentError("Supervise: no workers");
  for (const WorkerSpec& w : workers) {
    if (w.argv.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("Supervise: rank ", w.rank, ": empty argv"));
    }
  }
  // SIGCHLD's default disposition may discard it; a handler makes sure it stays pending.
  struct sigaction chld {
  }, old_chld{};
  chld.sa_handler = NoopHandler;
  sigemptyset(&chld.sa_mask);
  if (sigaction(SIGCHLD, &chld, &old_chld) != 0) {
    return absl::InternalError(absl::StrCat("sigaction(SIGCHLD): ", std::strerror(errno)));
  }
  sigset_t watched, old_mask;
  sigemptyset(&watched);
  sigaddset(&watched, SIGCHLD);
  sigaddset(&watched, SIGTERM);
  sigaddset(&watched, SIGINT);
  if (sigprocmask(SIG_BLOCK, &watched, &old_mask) != 0) {
    sigaction(SIGCHLD, &old_chld, nullptr);
    return absl::InternalError(absl::StrCat("sigprocmask: ", std::strerror(errno)));
  }
  Run run(workers, options);
  SupervisionResult result = run.Go(options.child_mask != nullptr ? *options.child_mask : old_mask);
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  sigaction(SIGCHLD, &old_chld, nullptr);
  return result;
}

}  // namespace coach::launcher
