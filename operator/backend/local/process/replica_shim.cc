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
//
// main below is that sequence of steps; the command's start and end are in shim_command.h, the
// wait for its end in shim_supervision.h.

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/local/process/exit_record.h"
#include "operator/backend/local/process/log_files.h"
#include "operator/backend/local/process/proc_stat.h"
#include "operator/backend/local/process/progress_writer.h"
#include "operator/backend/local/process/replica_cgroup.h"
#include "operator/backend/local/process/shim_command.h"
#include "operator/backend/local/process/shim_supervision.h"

namespace {

using coach::backend::local::ExitRecord;
using coach::backend::local::LogWriter;
using coach::backend::local::ProcessFile;
using coach::backend::local::ProcStat;
using coach::backend::local::ProgressWriter;
using coach::backend::local::shim::Cgroup;
using coach::backend::local::shim::CommandEnd;
using coach::backend::local::shim::CommandFds;
using coach::backend::local::shim::Output;
using coach::backend::local::shim::StartError;

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

int Usage() {
  fprintf(stderr,
          "usage: coach-replica-shim --replica-files=B --log=L [--max-log-bytes=N] "
          "[--cwd=W] [--status-fd=F] [--no-cgroup] -- COMMAND ARGS...\n");
  return 2;
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

void BecomeSupervisor(int status_fd) {
  if (status_fd >= 0) fcntl(status_fd, F_SETFD, FD_CLOEXEC);
  setsid();  // EPERM when the runner already made us a session leader: fine.
  signal(SIGPIPE, SIG_IGN);
  // Orphans of the replica's processes become the shim's children instead of init's, so
  // that a process that left the group (setsid, a double fork) is still found at the end.
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

// The shim's own pid and start time: with them the runner tells it from a process that reused
// its pid.
ProcessFile OwnProcessFile() {
  ProcessFile pf;
  pf.pid = getpid();
  absl::StatusOr<ProcStat> self = coach::backend::local::ReadProcStat(getpid());
  if (self.ok()) pf.start_time = self->start_time;
  return pf;
}

void ReportStarted(const Args& args, const ProcessFile& pf) {
  (void)coach::backend::local::WriteProcessFile(args.replica_files, pf);
  WriteStatus(args.status_fd, absl::StrCat("pgid ", pf.pgid, "\n"));
}

ExitRecord ExitRecordOf(const ProcessFile& pf, const StartError& start_error, const CommandEnd& end,
                        coach::Clock* clock) {
  ExitRecord record;
  record.finished_at = clock->Now();
  record.pid = pf.pid;
  record.pgid = pf.pgid;
  record.start_time = pf.start_time;
  if (!start_error.message.empty()) {
    record.exit_code = start_error.exit_code;
    record.message = start_error.message;
  } else if (end.wait_failed) {
    record.exit_code = 128;
    record.message = absl::StrCat("waitpid: ", strerror(end.wait_errno));
  } else if (WIFEXITED(end.status)) {
    record.exit_code = WEXITSTATUS(end.status);
  } else if (WIFSIGNALED(end.status)) {
    record.signal = WTERMSIG(end.status);
    record.exit_code = 128 + record.signal;
    record.message =
        absl::StrCat("killed by signal ", record.signal, " (", strsignal(record.signal), ")");
  }
  return record;
}

// Writes the exit record, then removes the cgroup; returns the shim's exit code.
int RecordExit(const Args& args, const ExitRecord& record, const std::string& cgroup,
               coach::Clock* clock) {
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

}  // namespace

int main(int argc, char** argv) {
  namespace shim = coach::backend::local::shim;
  Args args;
  if (!ParseArgs(argc, argv, &args)) return Usage();
  coach::Clock* const clock = coach::Clock::Real();
  BecomeSupervisor(args.status_fd);
  absl::StatusOr<std::unique_ptr<LogWriter>> log = LogWriter::Open(args.log, args.max_log_bytes);
  if (!log.ok()) return Fail(args, std::string(log.status().message()));
  absl::StatusOr<CommandFds> fds = shim::OpenCommandFds();
  if (!fds.ok()) return Fail(args, std::string(fds.status().message()));
  ProcessFile pf = OwnProcessFile();
  Cgroup cgroup = args.cgroup ? shim::MakeReplicaCgroup(pf, clock) : Cgroup{};
  absl::StatusOr<pid_t> child = shim::StartCommand(args.cwd, &args.command, *fds, &cgroup, clock);
  if (!child.ok()) return Fail(args, std::string(child.status().message()));
  const StartError start_error = shim::AwaitStart(args.cwd, args.command[0], *fds);
  pf.pgid = *child;
  pf.cgroup = cgroup.dir;
  ReportStarted(args, pf);

  ProgressWriter progress(args.replica_files, clock);
  Output output{fds->out[0], log->get(), &progress};
  const CommandEnd end = shim::SuperviseUntilEnd(*child, &output, &progress);
  shim::KillReplica(*child, cgroup.dir, clock);
  shim::FinishOutput(&output, &progress, clock);
  return RecordExit(args, ExitRecordOf(pf, start_error, end, clock), cgroup.dir, clock);
}
