#pragma once

// Running the test's own shell commands (the test environment's scripts). Test code only: a
// command is the test's, never input from outside.

#include <string>

namespace coach::testing {

// `s` as one single-quoted shell word.
std::string ShellQuote(const std::string& s);

// Runs `cmd` with /bin/sh; its standard output is appended to *out. Returns the exit code
// (-1 when it could not run or did not exit normally).
int RunShell(const std::string& cmd, std::string* out);

}  // namespace coach::testing
