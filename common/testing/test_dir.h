// A directory of its own for each use in a test, under the test's $TEST_TMPDIR.

#pragma once

#include <string>

namespace coach::testing {

// A new, empty directory whose name starts with `prefix` (mkdtemp under $TEST_TMPDIR, /tmp
// outside `bazel test`). Aborts the test binary when none can be made: no test can go on.
std::string FreshTestDir(const std::string& prefix);

}  // namespace coach::testing
