// `coach-launch --install DIR`, then the installed copy run through the bundled loader with an
// empty environment, as the operator's wrapped replica command runs it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/testing/test_dir.h"

namespace {

constexpr char kLauncher[] = "launcher/coach-launch";

struct Result {
  int exit_code = -1;
  std::string stderr_text;
};

// Runs argv with exactly `env` (no PATH, no LD_LIBRARY_PATH unless given).
Result RunProcess(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  const std::string err_path = ::coach::testing::FreshTestDir("self_install") + "/stderr";
  std::vector<std::string> a = args, e = env;
  std::vector<char*> argv, envp;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : e) envp.push_back(s.data());
  envp.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(err_path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    dup2(fd, STDERR_FILENO);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream in(err_path);
  std::stringstream ss;
  ss << in.rdbuf();
  r.stderr_text = ss.str();
  return r;
}

bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

TEST(SelfInstallTest, InstalledCopyRunsThroughBundledLoaderWithEmptyEnvironment) {
  const std::string dir = ::coach::testing::FreshTestDir("self_install") + "/x";
  Result install = RunProcess({kLauncher, "--install", dir});
  ASSERT_EQ(install.exit_code, 0) << install.stderr_text;
  EXPECT_TRUE(IsExecutable(dir + "/bin/coach-launch"));
  EXPECT_TRUE(IsExecutable(dir + "/lib/ld.so"));
  EXPECT_EQ(access((dir + "/lib/libc.so.6").c_str(), R_OK), 0);

  const std::vector<std::string> wrap = {dir + "/lib/ld.so", "--library-path", dir + "/lib",
                                         dir + "/bin/coach-launch", "--"};
  auto with = [&](std::vector<std::string> cmd) {
    std::vector<std::string> argv = wrap;
    argv.insert(argv.end(), cmd.begin(), cmd.end());
    return argv;
  };
  Result ok = RunProcess(with({"/bin/true"}));
  EXPECT_EQ(ok.exit_code, 0) << ok.stderr_text;
  Result three = RunProcess(with({"/bin/sh", "-c", "exit 3"}));
  EXPECT_EQ(three.exit_code, 3) << three.stderr_text;

  // Installing again over the first install (the init container restarting) works.
  Result again = RunProcess({kLauncher, "--install", dir});
  EXPECT_EQ(again.exit_code, 0) << again.stderr_text;
}

TEST(SelfInstallTest, ErrorNamesTheFile) {
  const std::string file = ::coach::testing::FreshTestDir("self_install") + "/not-a-dir";
  std::ofstream(file) << "x";
  Result r = RunProcess({kLauncher, "--install", file + "/sub"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.stderr_text.find(file + "/sub"), std::string::npos) << r.stderr_text;
}

TEST(SelfInstallTest, MissingDirectoryIsAUsageError) {
  Result r = RunProcess({kLauncher, "--install"});
  EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
}

}  // namespace
