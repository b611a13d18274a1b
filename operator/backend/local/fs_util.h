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

// Writes `contents` to `path` atomically: write `<path>.tmp`, fsync, rename, fsync the
// directory. Readers see either the old file or the whole new one, never a torn write.
// Errors: Internal (any syscall failed).
absl::Status WriteFileAtomic(const std::string& path, const std::string& contents);

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
