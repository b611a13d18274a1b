// coach-replica-shim's watch over the running command (replica_shim.cc): its output copied into
// the log and scanned for progress, until the command ends, and what is left in the pipe after.

#pragma once

#include <sys/types.h>

#include <cstdint>

#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/local/process/log_files.h"
#include "operator/backend/local/process/progress_writer.h"

namespace coach::backend::local::shim {

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
  void Copy(int max_reads);
  // Copies until the end of file, or until nothing came for `timeout` on `clock`.
  void Drain(Clock* clock, absl::Duration timeout);
};

// How the wait for the command ended.
struct CommandEnd {
  int status = 0;  // waitpid's, unless wait_failed
  bool wait_failed = false;
  int wait_errno = 0;  // when wait_failed
};

// Copies `output` (made non-blocking) and writes the progress when due, until `child` ended;
// reaps, meanwhile, any orphan re-parented to the shim.
CommandEnd SuperviseUntilEnd(pid_t child, Output* output, ProgressWriter* progress);

// Once every process of the replica is gone: copies what is left in the pipe, closes it and
// writes the last progress.
void FinishOutput(Output* output, ProgressWriter* progress, Clock* clock);

}  // namespace coach::backend::local::shim
