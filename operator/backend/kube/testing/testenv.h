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

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace coach::kube::testing {

// CI=true (or 1): missing prerequisites fail tests instead of skipping them.
bool InCi();

class TestEnv {
 public:
  // Brings a control plane up in a fresh temporary folder. NotFound: the script or its cached
  // binaries are missing (build them with `tools/testenv/testenv build`); the caller skips
  // outside CI. Other errors: it was there but did not start (the logs are in the message).
  static absl::StatusOr<std::unique_ptr<TestEnv>> Start();
  ~TestEnv();  // `testenv down`

  const std::string& kubeconfig() const { return kubeconfig_; }

 private:
  TestEnv() = default;
  std::string script_;
  std::string dir_;  // empty when reusing COACH_TESTENV_KUBECONFIG
  std::string kubeconfig_;
};

}  // namespace coach::kube::testing
