#pragma once

// KubeFixture: the end-to-end suite of coach-operator --backend=kube against a real control
// plane (tools/testenv: etcd, kube-apiserver, controller-manager, scheduler, kwok nodes).
//
// One control plane per test binary (SetUpTestSuite of KubeTest starts it through
// operator/backend/kube/testing/testenv.h, which applies charts/coach/crds, and starts one
// coach-operator); every test works in its own namespace (ns()). Tests drive jobs with kubectl,
// as a cluster user would, and check pods, services and the job's status with kubectl's JSON.
//
// What this file adds to TestEnv: the operator processes, the `coach` CLI, kubectl with its
// output captured, a kube-apiserver restart, and the per-test namespace and helpers.
// coach-operator and coach come from the runfiles. The tests are tagged local/no-sandbox (they
// start processes listening on loopback and read the testenv binaries cached under
// $HOME/.cache/coach/testenv). Without those binaries the tests skip, except under CI=true
// where they fail.

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "e2e/common/child_process.h"
#include "e2e/common/job_manifest.h"
#include "e2e/common/loopback_operator.h"
#include "e2e/common/sdk_client.h"
#include "e2e/common/test_env.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "operator/backend/kube/testing/testenv.h"

namespace coach::e2e::kube {

// A command's exit code and output (kubectl, coach, testenv).
using CmdResult = CommandResult;

using ::coach::kubeclient::testing::InCi;

// How often the suite polls: each poll runs kubectl, a process of its own.
inline constexpr absl::Duration kKubectlPoll = absl::Milliseconds(200);

// In OperatorProcess's extra_args: start the operator with its default API authentication
// (without this or an --api-auth/--token-file argument it gets --api-auth=none).
inline constexpr char kOperatorDefaultApiAuth[] = "<default api auth>";

// One coach-operator process (--backend=kube, --log-level=debug) with its own ports, state
// directory <dir>/<name>-state (its HOME too) and log files <dir>/<name>-<n>.log.
class OperatorProcess : public LoopbackOperator {
 public:
  OperatorProcess(const std::string& name, const std::string& dir, const std::string& kubeconfig,
                  const std::vector<std::string>& extra_args);
};

// The control plane of this test binary: a TestEnv with coach's CRDs applied.
class ControlPlane {
 public:
  // NotFound: testenv or its binaries are missing (skip outside CI).
  static absl::Status Start();
  // `testenv down`, unless COACH_E2E_KEEP is set (then the folder is printed).
  static void Stop();
  static ControlPlane* Get();

  const std::string& kubeconfig() const { return env_->kubeconfig(); }

  // kubectl --kubeconfig ... args; `input` goes to its stdin.
  CmdResult Kubectl(const std::vector<std::string>& args, const std::string& input = "",
                    absl::Duration timeout = absl::Seconds(60)) const;
  // The argv of `kubectl --kubeconfig ... args`, for a kubectl that runs beside the test (a
  // watch) rather than to its end.
  std::vector<std::string> KubectlArgv(const std::vector<std::string>& args) const;
  // kill -9 the kube-apiserver, start it again with the same command line, wait for /readyz.
  // NotFound when this binary did not start the control plane (COACH_TESTENV_KUBECONFIG).
  absl::Status RestartApiServer(absl::Duration down_for = absl::Seconds(3));

 private:
  std::unique_ptr<::coach::kubeclient::testing::TestEnv> env_;
};

// Runs argv (argv[0] a path) with stdout/stderr captured; kills it after `timeout`.
CmdResult RunCommand(const std::vector<std::string>& argv, const std::string& input,
                     absl::Duration timeout, const std::vector<std::string>& env_overrides = {});

// The `coach` CLI of the runfiles with --server `server` ("": none, for its offline commands).
CmdResult RunCoach(const std::string& server, const std::vector<std::string>& args,
                   const std::string& input = "", absl::Duration timeout = absl::Seconds(60));

// Base of the suite's tests: a control plane and one operator per binary; ns() is a fresh
// namespace per test (deleted at the end unless the test failed).
class KubeTest : public ::testing::Test {
 public:
  // For a test binary that starts its own operators: set to false in a static initialiser.
  static bool& StartSuiteOperatorForTests() { return StartSuiteOperator(); }

 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;
  void TearDown() override;

  static ControlPlane& cp() { return *ControlPlane::Get(); }
  static OperatorProcess& op() { return *op_; }
  // Extra flags of the suite's operator (set before SetUpTestSuite, e.g. in a test file's
  // static initialiser); empty by default.
  static std::vector<std::string>& OperatorArgs();
  // Whether the suite starts an operator at all (the leader-election test starts its own).
  static bool& StartSuiteOperator();

  const std::string& ns() const { return ns_; }
  CmdResult Kubectl(const std::vector<std::string>& args, const std::string& input = "") const {
    return cp().Kubectl(args, input);
  }
  // kubectl apply -n ns() -f - ; fails the test when kubectl fails.
  void Apply(const std::string& yaml);
  void Apply(const JobManifest& job) { Apply(job.Yaml()); }
  // The `coach` CLI against the suite's operator.
  CmdResult Coach(const std::vector<std::string>& args) const {
    return RunCoach(op().server(), args);
  }
  // kubectl get <resource> <name> -n ns() -o json; nullopt when not found.
  std::optional<nlohmann::json> Get(const std::string& resource, const std::string& name) const;
  // kubectl get <resource> -n ns() [-l selector] -o json; the items.
  std::vector<nlohmann::json> List(const std::string& resource,
                                   const std::string& selector = "") const;
  std::vector<nlohmann::json> JobPods(const std::string& job) const {
    return List("pods", "training.kubeflow.org/job-name=" + job);
  }
  // The job's pods: name -> uid (the same pods after a restart have the same uids).
  std::map<std::string, std::string> PodUids(const std::string& job) const;
  // Waits until the job has condition `type` with status True; returns the job (or nullopt
  // with a test failure that shows the last status and the operator's log tail).
  std::optional<nlohmann::json> WaitCondition(const std::string& resource, const std::string& name,
                                              const std::string& type,
                                              absl::Duration timeout = absl::Seconds(90));
  // The condition `type` of a job (null json when absent).
  static nlohmann::json Condition(const nlohmann::json& job, const std::string& type);
  static bool HasCondition(const nlohmann::json& job, const std::string& type);
  // The value of env var `name` in container 0 of a pod ("" when absent).
  static std::string PodEnv(const nlohmann::json& pod, const std::string& name);
  std::string OperatorLogTail(size_t bytes = 3000) const;

  static std::unique_ptr<OperatorProcess> op_;
  static bool skip_;
  static std::string skip_reason_;
  std::string ns_;
};

}  // namespace coach::e2e::kube
