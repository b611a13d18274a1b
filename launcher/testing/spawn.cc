#include "launcher/testing/spawn.h"

#include <fcntl.h>
#include <unistd.h>

namespace coach::launcher::testing {

pid_t Spawn(const std::string& program, const std::vector<std::string>& args,
            std::map<std::string, std::string> env, const std::string& stderr_path,
            const std::string& stdout_path) {
  env.emplace("PATH", "/usr/bin:/bin");
  // Built before fork(): the child only makes syscalls.
  std::vector<std::string> argv_s = {program};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<std::string> env_s;
  for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int err = open(stderr_path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    dup2(err, STDERR_FILENO);
    if (!stdout_path.empty()) {
      const int out = open(stdout_path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
      dup2(out, STDOUT_FILENO);
    }
    execve(argv[0], argv.data(), envp.data());
    _exit(99);
  }
  return pid;
}

}  // namespace coach::launcher::testing
