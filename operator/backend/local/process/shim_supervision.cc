#include "operator/backend/local/process/shim_supervision.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "absl/strings/string_view.h"
#include "operator/backend/local/process/shim_command.h"

namespace coach::backend::local::shim {
namespace {

// Without a signalfd (never seen), SIGCHLD is looked for every 20 ms. A pending progress
// write bounds the wait too.
int PollTimeoutMs(bool have_signalfd, ProgressWriter* progress) {
  int timeout_ms = have_signalfd ? -1 : 20;
  if (std::optional<absl::Duration> due = progress->UntilDue(); due.has_value()) {
    const int due_ms =
        static_cast<int>(absl::ToInt64Milliseconds(absl::Ceil(*due, absl::Milliseconds(1))));
    timeout_ms = timeout_ms < 0 ? due_ms : std::min(timeout_ms, due_ms);
  }
  return timeout_ms;
}

// Reaps the command and any orphan that was re-parented to the shim and ended. True once the
// command ended or waitpid failed, as `end` then says.
bool Reap(pid_t child, CommandEnd* end) {
  bool ended = false;
  while (true) {
    int st = 0;
    pid_t r = waitpid(-1, &st, WNOHANG);
    if (r == child) end->status = st, ended = true;
    if (r > 0) continue;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && !ended) end->wait_failed = ended = true;
    return ended;
  }
}

}  // namespace

void Output::Copy(int max_reads) {
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

void Output::Drain(Clock* clock, absl::Duration timeout) {
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

CommandEnd SuperviseUntilEnd(pid_t child, Output* output, ProgressWriter* progress) {
  fcntl(output->fd, F_SETFL, O_NONBLOCK);
  const sigset_t child_ended = ChildEnded();
  const int child_fd = signalfd(-1, &child_ended, SFD_NONBLOCK | SFD_CLOEXEC);
  CommandEnd end;
  bool ended = false;
  while (!ended) {
    const int timeout_ms = PollTimeoutMs(child_fd >= 0, progress);
    struct pollfd fds[2] = {{output->eof ? -1 : output->fd, POLLIN, 0}, {child_fd, POLLIN, 0}};
    if (poll(fds, 2, timeout_ms) < 0 && errno != EINTR) {
      struct timespec pause = {0, 20 * 1000 * 1000};  // ENOMEM: try again shortly
      nanosleep(&pause, nullptr);
    }
    if (fds[0].revents != 0) output->Copy(/*max_reads=*/16);
    progress->WriteIfDue();
    if (fds[1].revents != 0) {
      struct signalfd_siginfo info;
      while (read(child_fd, &info, sizeof(info)) > 0) {
      }
    }
    ended = Reap(child, &end);
  }
  end.wait_errno = errno;
  if (child_fd >= 0) close(child_fd);
  return end;
}

void FinishOutput(Output* output, ProgressWriter* progress, Clock* clock) {
  // Every writer is gone now, so the pipe ends after what they wrote. One that is not (a
  // descriptor passed to a process outside the replica) is waited for only briefly.
  output->Drain(clock, absl::Seconds(2));
  close(output->fd);
  // Before the exit file: once that is there, the progress file is final.
  progress->Flush();
}

}  // namespace coach::backend::local::shim
