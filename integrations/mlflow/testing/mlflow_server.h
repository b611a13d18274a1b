#pragma once

// A real MLflow tracking server for tests, started and stopped through tools/mlflow_env.sh (linked
// from testdata/, a data dependency of the test). Its state (sqlite store, artifacts, log) lives in
// a directory under TEST_TMPDIR, so a Restart() comes back on the same port with the same store.
//
// When MLflow is not installed (tools/mlflow_env.sh install), Start returns NotFound; tests use
// COACH_REQUIRE_MLFLOW so that this skips locally and fails under CI=true.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace coach::mlflow::testing {

class MlflowServer {
 public:
  struct Options {
    bool basic_auth = false;  // --app-name basic-auth; admin user admin/password1234
    int workers = 2;
    int port = 0;  // 0: a free one (a test may point an operator at a port before the server)
  };
  // NotFound when MLflow is not installed; Internal when the server does not come up (with its
  // log).
  static absl::StatusOr<std::unique_ptr<MlflowServer>> Start(Options options);
  static absl::StatusOr<std::unique_ptr<MlflowServer>> Start() { return Start(Options{}); }
  ~MlflowServer();

  absl::Status Stop();
  absl::Status Restart();  // same directory, port and store

  const std::string& uri() const { return uri_; }
  const std::string& dir() const { return dir_; }

  // The venv's python; NotFound when not installed.
  static absl::StatusOr<std::string> Python();
  // Runs integrations/mlflow/testdata/<script> with the venv's python, `env` added to the
  // environment; returns its stdout, or Internal with its stderr when it exits non-zero.
  static absl::StatusOr<std::string> RunPython(const std::string& script,
                                               const std::vector<std::string>& args,
                                               const std::map<std::string, std::string>& env = {});
  // A file from the runfiles tree ("tools/mlflow_env.sh").
  static std::string Runfile(const std::string& path);

 private:
  MlflowServer(std::string dir, Options options) : dir_(std::move(dir)), options_(options) {}
  absl::Status StartHere();

  std::string dir_;
  Options options_;
  std::string uri_;
  bool running_ = false;
};

// True under CI=true: a missing MLflow must fail, not skip.
bool InCi();

}  // namespace coach::mlflow::testing

// In a TEST body: `COACH_REQUIRE_MLFLOW(server, MlflowServer::Start());` declares `server`
// (a std::unique_ptr<MlflowServer>) or skips (fails under CI=true) when MLflow is not installed.
#define COACH_REQUIRE_MLFLOW(var, expr)                                             \
  auto var##_or = (expr);                                                           \
  if (!var##_or.ok()) {                                                             \
    if (absl::IsNotFound(var##_or.status()) && !::coach::mlflow::testing::InCi()) { \
      GTEST_SKIP() << var##_or.status().message();                                  \
    }                                                                               \
    FAIL() << var##_or.status();                                                    \
  }                                                                                 \
  auto var = std::move(var##_or).value()
