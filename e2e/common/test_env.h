#pragma once

// What an end-to-end test finds around it: its runfiles and temporary directory, and whole
// files to read and write. Test-only helpers; none of them fails a test by itself (the
// ...OrDie ones abort). Polling until something holds is common/testing/eventually.h's
// Eventually, here under coach::e2e too.

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/testing/eventually.h"

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

using ::coach::testing::Eventually;

// What the suites wait for real processes to do on a loaded machine, and how often they look.
inline constexpr absl::Duration kProcessTimeout = absl::Seconds(90);
inline constexpr absl::Duration kProcessPoll = absl::Milliseconds(100);

}  // namespace coach::e2e
