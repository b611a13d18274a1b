#include "integrations/mlflow/testing/mlflow_server.h"

#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace coach::mlflow::testing {

namespace {

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out.push_back(c);
  }
  return out + "'";
}

struct CommandResult {
  int exit_code = -1;
  std::string out;
};

// Runs a shell command; stdout captured, stderr to `err_file` when given.
CommandResult RunCommand(const std::string& command) {
  CommandResult r;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string TempRoot() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t != nullptr ? t : "/tmp";
}

std::string ReadTail(const std::string& path) {
  CommandResult r = RunCommand(absl::StrCat("tail -40 ", ShellQuote(path), " 2>/dev/null"));
  return r.out;
}

}  // namespace

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (absl::AsciiStrToLower(ci) == "true" || std::string(ci) == "1");
}

std::string MlflowServer::Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr) return absl::StrCat(srcdir, "/", ws != nullptr ? ws : "coach", "/", path);
  return path;  // run from the repository root
}

absl::StatusOr<std::string> MlflowServer::Python() {
  CommandResult r = RunCommand(absl::StrCat(
      ShellQuote(Runfile("integrations/mlflow/testdata/mlflow_env.sh")), " python 2>&1"));
  if (r.exit_code != 0) {
    return absl::NotFoundError(
        absl::StrCat("MLflow is not installed (tools/mlflow_env.sh install): ",
                     absl::StripAsciiWhitespace(r.out)));
  }
  return std::string(absl::StripAsciiWhitespace(r.out));
}

absl::StatusOr<std::unique_ptr<MlflowServer>> MlflowServer::Start(Options options) {
  absl::StatusOr<std::string> python = Python();
  if (!python.ok()) return python.status();
  static std::atomic<int> counter{0};
  std::string dir = absl::StrCat(TempRoot(), "/mlflow-", getpid(), "-", counter.fetch_add(1));
  std::filesystem::create_directories(dir);
  std::unique_ptr<MlflowServer> server(new MlflowServer(dir, options));
  absl::Status s = server->StartHere();
  if (!s.ok()) return s;
  return server;
}

absl::Status MlflowServer::StartHere() {
  std::string cmd = absl::StrCat(
      "COACH_MLFLOW_WORKERS=", options_.workers, " COACH_MLFLOW_AUTH=", options_.basic_auth ? 1 : 0,
      " ", ShellQuote(Runfile("integrations/mlflow/testdata/mlflow_env.sh")), " start ",
      ShellQuote(dir_), options_.port > 0 ? absl::StrCat(" ", options_.port) : "", " 2>>",
      ShellQuote(dir_ + "/start.err"));
  CommandResult r = RunCommand(cmd);
  if (r.exit_code != 0) {
    return absl::InternalError(
        absl::StrCat("mlflow server did not start: ", ReadTail(dir_ + "/start.err"),
                     ReadTail(dir_ + "/server.log")));
  }
  uri_ = std::string(absl::StripAsciiWhitespace(r.out));
  running_ = true;
  return absl::OkStatus();
}

absl::Status MlflowServer::Stop() {
  if (!running_) return absl::OkStatus();
  CommandResult r =
      RunCommand(absl::StrCat(ShellQuote(Runfile("integrations/mlflow/testdata/mlflow_env.sh")),
                              " stop ", ShellQuote(dir_), " 2>&1"));
  running_ = false;
  if (r.exit_code != 0) return absl::InternalError(absl::StrCat("mlflow stop: ", r.out));
  return absl::OkStatus();
}

absl::Status MlflowServer::Restart() {
  if (absl::Status s = Stop(); !s.ok()) return s;
  return StartHere();
}

MlflowServer::~MlflowServer() { (void)Stop(); }

absl::StatusOr<std::string> MlflowServer::RunPython(const std::string& script,
                                                    const std::vector<std::string>& args,
                                                    const std::map<std::string, std::string>& env) {
  absl::StatusOr<std::string> python = Python();
  if (!python.ok()) return python.status();
  std::string cmd = "env";
  for (const auto& [k, v] : env) absl::StrAppend(&cmd, " ", ShellQuote(absl::StrCat(k, "=", v)));
  std::string err = absl::StrCat(TempRoot(), "/python-", getpid(), "-", std::rand(), ".err");
  absl::StrAppend(&cmd, " ", ShellQuote(*python), " ",
                  ShellQuote(Runfile("integrations/mlflow/testdata/" + script)));
  for (const std::string& a : args) absl::StrAppend(&cmd, " ", ShellQuote(a));
  absl::StrAppend(&cmd, " 2>", ShellQuote(err));
  CommandResult r = RunCommand(cmd);
  if (r.exit_code != 0) {
    return absl::InternalError(absl::StrCat(script, " exited ", r.exit_code, ": ", ReadTail(err)));
  }
  return r.out;
}

}  // namespace coach::mlflow::testing
