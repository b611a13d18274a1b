#include "e2e/common/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "e2e/common/test_env.h"

extern char** environ;

namespace coach::e2e {
namespace {

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::vector<std::string> ChildEnv(const std::vector<std::string>& overrides,
                                  const std::vector<std::string>& dropped_prefixes) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    bool keep = true;
    for (const std::string& prefix : dropped_prefixes) {
      if (absl::StartsWith(entry, prefix)) keep = false;
    }
    for (const std::string& o : overrides) {
      if (absl::StartsWith(entry, o.substr(0, o.find('=') + 1))) keep = false;
    }
    if (keep) out.push_back(entry);
  }
  for (const std::string& o : overrides) out.push_back(o);
  return out;
}

pid_t Spawn(std::vector<std::string> argv, std::vector<std::string> env, const std::string& in,
            const std::string& out, const std::string& err, bool die_with_parent) {
  // Built before fork: the child may only call async-signal-safe functions.
  std::vector<char*> cargv = CStrings(argv);
  std::vector<char*> cenv = CStrings(env);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  if (die_with_parent) prctl(PR_SET_PDEATHSIG, SIGKILL);
  const int in_fd = open(in.empty() ? "/dev/null" : in.c_str(), O_RDONLY);
  const int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (in_fd < 0 || out_fd < 0 || err_fd < 0) _exit(126);
  dup2(in_fd, 0);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  execve(cargv[0], cargv.data(), cenv.data());
  _exit(127);
}

std::optional<int> WaitPid(pid_t pid, absl::Duration timeout) {
  std::optional<int> result;
  Eventually(
      [&] {
        int status = 0;
        const pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) result = status;
        if (r < 0) result = -1;
        return result.has_value();
      },
      timeout, absl::Milliseconds(20));
  return result;
}

void KillAndReap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

CommandResult RunProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         const std::string& in, const std::string& out_stem,
                         absl::Duration timeout) {
  const std::string out = out_stem + ".out";
  const std::string err = out_stem + ".err";
  CommandResult result;
  const pid_t pid = Spawn(argv, env, in, out, err, /*die_with_parent=*/true);
  if (pid < 0) return result;  // waitpid(-1) would reap some other child
  std::optional<int> status = WaitPid(pid, timeout);
  if (!status) {
    KillAndReap(pid);
  } else if (WIFEXITED(*status)) {
    result.exit_code = WEXITSTATUS(*status);
  }
  result.out = ReadFileOrEmpty(out);
  result.err = ReadFileOrEmpty(err);
  return result;
}

std::string ReadProcFile(pid_t pid, const char* what) {
  return ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/", what));
}

char ProcState(pid_t pid) {
  const std::string stat = ReadProcFile(pid, "stat");
  // The command (field 2) may hold spaces and parentheses: the state follows the last ')'.
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return '?';
  return stat[paren + 2];
}

std::string DescribeProcesses(const std::vector<ProcessInfo>& processes) {
  std::string out;
  for (const ProcessInfo& p : processes) absl::StrAppend(&out, p.pid, ": ", p.cmdline, "\n");
  return out;
}

}  // namespace coach::e2e
