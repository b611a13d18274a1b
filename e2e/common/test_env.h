#pragma once

// What an end-to-end test finds around it: its runfiles and temporary directory, whole
// files to read and write, and polling until something holds. Test-only helpers; none of
// them fails a test by itself (the ...OrDie ones abort).

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace coach::e2e {

// The value of an environment variable, "" when unset.
std::string EnvOrEmpty(const char* name);

// The path of a runfile of this workspace ("operator/coach-operator").
std::string Runfile(const std::string& path);

// $TEST_TMPDIR, or /tmp outside `bazel test`.
std::string TestTmpDir();

// mkdtemp(<prefix>XXXXXX): a fresh directory whose path starts with `prefix`.
// InternalError when it cannot be made.
absl::StatusOr<std::string> MakeTempDir(const std::string& prefix);

// The whole content of a file ("" when unreadable).
std::string ReadFileOrEmpty(const std::string& path);
// Replaces the file's content; false when it cannot be written.
bool WriteFile(const std::string& path, const std::string& content);
// WriteFile, aborting the test binary when it fails (a fixture cannot go on without it).
void WriteFileOrDie(const std::string& path, const std::string& content);

// Polls `pred` every `poll` until it holds or `timeout` passes; returns whether it held.
// `pred` is always called at least once.
bool Eventually(const std::function<bool()>& pred, absl::Duration timeout = absl::Seconds(90),
                absl::Duration poll = absl::Milliseconds(100));

}  // namespace coach::e2e
