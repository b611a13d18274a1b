#pragma once

// OperatorFixture: the real coach-operator binary (local backend) as a child process of an
// end-to-end test, on free loopback ports, with a fresh state directory under
// $TEST_TMPDIR, driven through the C++ SDK (client()) and the `coach` CLI (Cli()).
//
// Binaries come from the test's runfiles ($TEST_SRCDIR/coach/...): coach-operator,
// coach-replica-shim, coach (CLI) and coach-launch (whose directory is put first on the
// operator's PATH, so replicas find `coach-launch` as the examples expect).
//
// Finding "the processes of this operator": the operator runs with HOME=<root>/home, a
// directory unique to the fixture, and the local backend hands HOME down to every
// replica (and a replica's children inherit it). Processes() scans /proc for processes
// whose environment holds that HOME or whose command line names the state directory (the
// shims). The operator itself is never listed.
//
// Cleanup: the destructor stops the operator (SIGTERM, then SIGKILL) and SIGKILLs every
// process Processes() still finds, so a failing test leaves nothing running.
//
// Not thread-safe; one fixture per test.

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "e2e/common/child_process.h"
#include "e2e/common/job_manifest.h"
#include "e2e/common/loopback_operator.h"
#include "e2e/common/sdk_client.h"
#include "e2e/common/test_env.h"
#include "gtest/gtest.h"
#include "sdk/cpp/job_builder.h"
#include "sdk/cpp/training_client.h"

namespace coach::e2e {

struct OperatorOptions {
  // Non-empty: the operator is started with --token-file holding this token. Empty: the
  // operator makes its own (<state>/api-token), which client() and Cli() present, unless
  // extra_args turn authentication off (--api-auth=none).
  std::string token;
  // --workdir; empty: <root>/work.
  std::string workdir;
  // Extra operator flags.
  std::vector<std::string> extra_args;
  // Directories put first on the operator's PATH, so its replicas find programs there as a
  // user's replicas find those of the operator's environment (a venv's torchrun, say).
  std::vector<std::string> path_prepend;
  // "NAME=value" entries added to the operator's environment (a history store's
  // AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, say).
  std::vector<std::string> extra_env;
};

// The `coach` CLI's exit code and output.
using CliResult = CommandResult;

// The namespace the local suites submit their jobs to.
inline constexpr char kNs[] = "default";

// The image of a shell job's replicas: a name only, the local backend runs the command on this
// host.
inline constexpr char kShellImage[] = "busybox:1.36";

// A PyTorchJob builder whose every replica runs `/bin/sh -c script` (add replicas,
// restart policy, run policy).
sdk::JobBuilder ShellJob(const std::string& name, const std::string& script);
api::v1::TrainingJob BuildOrDie(const sdk::JobBuilder& builder);
// The manifest of a PyTorchJob whose one Master runs `/bin/sh -c script`, restartPolicy Never.
JobManifest ShellManifest(const std::string& name, const std::string& script);

class OperatorFixture {
 public:
  // `name` names the fixture's directory under $TEST_TMPDIR (made unique).
  explicit OperatorFixture(const std::string& name, OperatorOptions options = {});
  ~OperatorFixture();
  OperatorFixture(const OperatorFixture&) = delete;
  OperatorFixture& operator=(const OperatorFixture&) = delete;

  // Starts the operator on fresh ports (retrying on new ports when the start fails) and
  // waits up to `timeout` for /readyz to answer 200. FailedPrecondition when running.
  absl::Status Start(absl::Duration timeout = absl::Seconds(60));
  // SIGTERM, wait up to `timeout`, SIGKILL if still there. OK when not running. Drops
  // client() (a later Start makes a new one).
  absl::Status Stop(absl::Duration timeout = absl::Seconds(30));
  // SIGKILL the operator and reap it (replicas keep running).
  absl::Status Kill9();
  // Start() again on the same state directory (after Stop or Kill9).
  absl::Status Restart(absl::Duration timeout = absl::Seconds(60));
  bool running() const { return operator_->running(); }

  // An SDK client for the running operator, with token() (if any). Re-made on every Start
  // (ports change).
  sdk::TrainingClient& client() { return *client_; }
  // A client with another token ("" for none).
  std::unique_ptr<sdk::TrainingClient> NewClient(const std::string& token) const;

  // Runs the `coach` CLI against the operator (--server set through COACH_SERVER; no
  // COACH_* from the test's environment; when `with_token`, the fixture's token through
  // COACH_TOKEN_FILE, or the operator's own as the CLI finds it by default, through
  // COACH_STATE_DIR). Kills it after `timeout`.
  CliResult Cli(const std::vector<std::string>& args, bool with_token = true,
                absl::Duration timeout = absl::Seconds(120)) const;

  // Processes of this fixture's replicas (see above), the operator excluded.
  std::vector<ProcessInfo> Processes() const;
  // Waits until Processes() is empty; returns what is left after `timeout`.
  std::vector<ProcessInfo> WaitNoProcesses(absl::Duration timeout = absl::Seconds(60)) const;
  // SIGKILLs every process Processes() lists. Returns how many.
  int KillLeftovers() const;

  // Waits until `pred(job)` holds for GetJob; the last job read (or the last error).
  absl::StatusOr<api::v1::TrainingJob> WaitJob(
      const std::string& name, const std::function<bool(const api::v1::TrainingJob&)>& pred,
      absl::Duration timeout = absl::Seconds(120), const std::string& namespace_ = kNs);
  // Waits until the job Succeeded or Failed. An error (the wait timed out) carries the job's
  // status as last read, which says where it stood.
  absl::StatusOr<api::v1::TrainingJob> WaitFinished(const std::string& name, absl::Duration timeout,
                                                    const std::string& namespace_ = kNs);
  // Waits until GetJob says NotFound. OK then; DeadlineExceeded otherwise.
  absl::Status WaitJobGone(const std::string& name, absl::Duration timeout = absl::Seconds(60),
                           const std::string& namespace_ = kNs);
  // The whole log of one replica ("master-0") through GetJobLogs, or the error.
  absl::StatusOr<std::string> Logs(const std::string& name, const std::string& replica,
                                   const std::string& namespace_ = kNs);

  const std::string& root() const { return root_; }  // the fixture's directory
  const std::string& state_dir() const { return state_dir_; }
  const std::string& home() const { return home_; }           // the operator's HOME
  std::string server() const { return operator_->server(); }  // "127.0.0.1:<grpc port>"
  int http_port() const { return operator_->http_port(); }
  pid_t operator_pid() const { return operator_->pid(); }
  // The token callers present: options.token, else the operator's own once it started
  // ("" with --api-auth=none).
  std::string token() const;
  // The operator's log of every start so far, concatenated (for failure messages).
  std::string OperatorLog() const { return operator_->Log(); }

 private:
  OperatorOptions options_;
  std::string root_;
  std::string state_dir_;
  std::string home_;
  std::string workdir_;
  std::string token_file_;
  // Logs to <root>/operator-<n>.log; made in the constructor, after the directories.
  std::unique_ptr<LoopbackOperator> operator_;
  std::unique_ptr<sdk::TrainingClient> client_;
};

// Base of a test with one operator of its own, op_: started by StartOperator (named after the
// test unless `name` is given), its log printed when the test failed, stopped at the end.
class OperatorTest : public ::testing::Test {
 protected:
  // A fatal failure with the operator's log when it does not start.
  void StartOperator(OperatorOptions options = {}, const std::string& name = "");
  void TearDown() override;

  std::unique_ptr<OperatorFixture> op_;
};

}  // namespace coach::e2e
