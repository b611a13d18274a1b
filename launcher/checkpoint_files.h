#pragma once

// The files of the checkpoint-on-notice contract between coach-launch and one worker
// (checkpoint_relay.h; docs/recovery.md, "Checkpoint on notice", "The training code's side"):
//   FILE          the request, written by the launcher: {"id":N,"deadline_unix_ms":D}
//   FILE.armed    the worker's opt-in to SIGUSR1: its own process id, in decimal
//   FILE.done     the worker's answer: {"id":N,"step":S}, or {"id":N,"error":"why"}
// The worker's two files are read without trusting them: never through a symbolic link, never
// blocking (a FIFO), only a regular file, at most a few bytes; nothing in them is a path.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace coach::launcher {

inline constexpr size_t kMaxArmedFileBytes = 32;
inline constexpr size_t kMaxAnswerFileBytes = 4096;

// {"id":<id>,"deadline_unix_ms":<ms>} and a newline.
std::string RenderCheckpointRequest(int64_t id, int64_t deadline_unix_ms);

// Replaces `path` with `content` at once: readers see the old file or the new one, never a part
// (a temporary file beside it, renamed over it). Never writes through a link another process put
// at the temporary name. Errors: Internal, naming the path and the system's reason.
absl::Status WriteFileAtomically(const std::string& path, const std::string& content);

// The content of the regular file at `path`. Errors: NotFound (no such file); FailedPrecondition
// (a symbolic link, a directory, a FIFO, ...); OutOfRange (more than `max_bytes`); Internal.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, size_t max_bytes);

// A .armed file's process id: decimal digits (spaces and newlines around them allowed), above 1.
// InvalidArgument otherwise.
absl::StatusOr<pid_t> ParseArmedPid(absl::string_view text);

// A worker's answer.
struct WorkerAnswer {
  int64_t id = 0;
  // Set when the worker saved; otherwise `error` says why not.
  std::optional<int64_t> step;
  std::string error;
};

// A .done file: a JSON object with "id" (an integer >= 1) and either "step" (an integer >= 0) or
// "error" (a string); other keys are ignored. InvalidArgument saying what is wrong otherwise.
absl::StatusOr<WorkerAnswer> ParseWorkerAnswer(absl::string_view text);

// `text` as a report may carry it: printable ASCII (others become '?'), at most `max_bytes`
// (cut, ending in "...").
std::string BoundedMessage(absl::string_view text, size_t max_bytes = 256);

}  // namespace coach::launcher
