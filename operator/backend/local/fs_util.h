#pragma once

// Small POSIX file helpers shared by the store, the runner, the shim and the log code.
// Async-signal-safety is NOT promised: call these from normal code only.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace coach::backend::local {

// mkdir -p with mode 0755. OK when the directory already exists.
// Errors: InvalidArgument (empty path), Internal (mkdir failed, message has errno text).
absl::Status MakeDirs(const std::string& path);

// kSynced: the file survives a power cut once the call returns. kCrashSafe: it survives a
// kill of any process (the kernel has it) but not a power cut; for files whose loss in a
// power cut is harmless because what they say is derived again or no longer true (a
// process file names a process that the power cut ended), it saves two fsyncs a write.
enum class Durability { kSynced, kCrashSafe };

// Writes `contents` to `path` atomically: write `<path>.tmp`, rename (kSynced: fsync the
// file before the rename and the directory after it). Readers see either the old file or
// the whole new one, never a torn write.
// Errors: Internal (any syscall failed).
absl::Status WriteFileAtomic(const std::string& path, const std::string& contents,
                             Durability durability = Durability::kSynced);

// Whole file. Errors: NotFound (no such file), Internal (other read errors).
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Size in bytes. Errors: NotFound, Internal.
absl::StatusOr<int64_t> FileSize(const std::string& path);

// The directory part of `path` ("a/b/c" -> "a/b", "c" -> ".").
std::string DirName(const std::string& path);

// True for a Kubernetes-style name usable as one path component: 1..253 characters of
// [a-z0-9.-_], not "." or "..". Used before building paths from user-supplied names.
bool IsSafePathComponent(const std::string& name);

}  // namespace coach::backend::local
