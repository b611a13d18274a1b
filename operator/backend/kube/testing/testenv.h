#pragma once

// A real control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok) from the
// workspace's tools/testenv/testenv, for the contract suite and other real-apiserver tests.
//
// How the test finds it: the test is tagged "local" (no sandbox: it starts processes that
// listen on loopback and reads the binaries cached under $HOME/.cache/coach/testenv, HOME
// being passed by .bazelrc's --test_env); the workspace root is found by resolving the
// runfiles symlink of a source file of this package (data dependency), so the script is the
// checkout's own. COACH_TESTENV_KUBECONFIG (when passed with --test_env) uses a control plane
// that is already up instead.
//
// The e2e suites (e2e/kube/kube_fixture.h) start their control plane through this class too,
// so that bringing one up and down is written once.

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/testing/shell.h"
#include "operator/backend/kube/client/rest_kube_client.h"

namespace coach::kubeclient::testing {

// CI=true (or 1): missing prerequisites fail tests instead of skipping them.
bool InCi();

// Runs `cmd` with /bin/sh (common/testing/shell.h).
using ::coach::testing::RunShell;

// The checkout holding these sources, with a trailing '/'; "" when the runfiles do not
// lead to it.
std::string WorkspaceRoot();

class TestEnv {
 public:
  // Brings a control plane up in a fresh temporary folder. NotFound: the script or its cached
  // binaries are missing (build them with `tools/testenv/testenv build`); the caller skips
  // outside CI. Other errors: it was there but did not start (the logs are in the message).
  static absl::StatusOr<std::unique_ptr<TestEnv>> Start();
  ~TestEnv();  // `testenv down`

  const std::string& kubeconfig() const { return kubeconfig_; }
  // The folder of this control plane (its pids/ and logs/, as `testenv up --dir` lays them
  // out); "" when reusing COACH_TESTENV_KUBECONFIG.
  const std::string& dir() const { return dir_; }
  // The folder of the cached binaries (kubectl, kube-apiserver, ...), as `testenv bin` says.
  const std::string& bin() const { return bin_; }

  // "<cached kubectl> --kubeconfig '<kubeconfig>'", a shell command prefix.
  const std::string& kubectl() const { return kubectl_; }

  // A client of this control plane (its kubeconfig read afresh); tests pass their own limits.
  absl::StatusOr<std::unique_ptr<RestKubeClient>> NewClient(
      RestKubeClientOptions options = {}) const;

  // Applies the checkout's charts/coach/crds and waits until all six are established.
  absl::Status ApplyCoachCrds() const;

  // The destructor leaves the control plane up (for a look at its objects and logs after a
  // run); `testenv down --dir <dir()>` stops it.
  void KeepRunning() { keep_ = true; }

 private:
  TestEnv() = default;
  std::string script_;
  std::string dir_;  // empty when reusing COACH_TESTENV_KUBECONFIG
  std::string kubeconfig_;
  std::string kubectl_;
  std::string bin_;
  bool keep_ = false;
};

}  // namespace coach::kubeclient::testing
