#pragma once

// Starts a program (the coach-launch binary under test) as a child with exactly the given
// argument list and environment, its stderr (and, when a path is given, its stdout) in files
// the test reads afterwards. The caller waits for it (waitpid).

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace coach::launcher::testing {

// argv[0] is `program`, then `args`; the environment is `env` with PATH=/usr/bin:/bin unless it
// names one. A child that cannot exec exits 99.
pid_t Spawn(const std::string& program, const std::vector<std::string>& args,
            std::map<std::string, std::string> env, const std::string& stderr_path,
            const std::string& stdout_path = "");

}  // namespace coach::launcher::testing
