#include "operator/reconcile/restart_rule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1/kinds.h"
#include "operator/model/testing/job_builder.h"
#include "operator/model/testing/observed_builder.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/reconciler.h"

// Expected values: kubeflow-v1.md, "runPolicy and restarts" and "Status" (upstream
// v1.9.4's IsRetryableExitCode, ReconcilePods, UpdateJobStatus and PastBackoffLimit).

namespace coach::reconcile {
namespace {

using model::PodPhase;
using namespace coach::reconcile::testing;  // NOLINT

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

TEST(RestartRuleTest, RetryableExitCodes) {
  struct Case {
    int exit_code;
    bool retryable;
  };
  // clang-format off
  const Case cases[] = {
      {0, false},      // success of the main container: not a signal
      {1, false},      // the program's own failure
      {2, false},      // shell misuse / argparse error
      {127, false},    // command not found
      {128, true},     // 128 + signal 0: the boundary
      {130, true},     // SIGINT
      {137, true},     // SIGKILL (OOM killer, eviction)
      {143, true},     // SIGTERM (preemption, node drain)
      {255, true},     // exit(-1), ssh/MPI transport failure
      {0xbeef, true},  // no exit code seen: upstream's marker is retryable
  };
  // clang-format on
  for (const Case& c : cases) {
    EXPECT_EQ(IsRetryableExitCode(c.exit_code), c.retryable) << c.exit_code;
  }
}

TEST(RestartRuleTest, FailedPodIsRecreated) {
  struct Case {
    const char* policy;
    int exit_code;
    bool recreated;
    bool permanent;
  };
  // clang-format off
  const Case cases[] = {
      {"Always", 0, true, false},     {"Always", 1, true, false},
      {"Always", 137, true, false},   {"OnFailure", 1, true, false},
      {"OnFailure", 2, true, false},  {"OnFailure", 143, true, false},
      {"Never", 1, false, false},     {"Never", 137, false, false},
      {"Never", 255, false, false},   {"ExitCode", 0, false, true},
      {"ExitCode", 1, false, true},   {"ExitCode", 2, false, true},
      {"ExitCode", 127, false, true}, {"ExitCode", 128, true, false},
      {"ExitCode", 130, true, false}, {"ExitCode", 137, true, false},
      {"ExitCode", 143, true, false}, {"ExitCode", 255, true, false},
  };
  // clang-format on
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.policy, " exit ", c.exit_code));
    EXPECT_EQ(RecreatesFailedPod(c.policy, c.exit_code), c.recreated);
    EXPECT_EQ(IsPermanentFailure(c.policy, c.exit_code), c.permanent);
  }
}

TEST(RestartRuleTest, FailureRestartsOrFailsTheJob) {
  const api::v1::KindInfo& pytorch = *api::v1::FindKind(api::v1::PYTORCH_JOB);
  const api::v1::KindInfo& xgboost = *api::v1::FindKind(api::v1::XGBOOST_JOB);
  struct Case {
    const api::v1::KindInfo& kind;
    const char* policy;
    bool permanent_failure_seen;
    bool restarts;
  };
  // clang-format off
  const Case cases[] = {
      {pytorch, "Always", false, true},  // any policy but Never restarts
      {pytorch, "OnFailure", false, true},
      {pytorch, "ExitCode", false, true},  // retryable exit code
      {pytorch, "ExitCode", true, false},  // 1..127: the job fails
      {pytorch, "Never", false, false},
      {xgboost, "ExitCode", false, true},  // XGBoost restarts only under ExitCode
      {xgboost, "ExitCode", true, false},
      {xgboost, "OnFailure", false, false},
      {xgboost, "Always", false, false},
      {xgboost, "Never", false, false},
  };
  // clang-format on
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(std::string(c.kind.name), " ", c.policy,
                              " permanent=", c.permanent_failure_seen));
    EXPECT_EQ(FailureRestartsJob(c.kind, c.policy, c.permanent_failure_seen), c.restarts);
  }
}

TEST(RestartRuleTest, BackoffLimit) {
  struct Case {
    const char* policy;
    int limit;
    int restarts;
    bool counts;
    bool reached;
  };
  // clang-format off
  const Case cases[] = {
      {"OnFailure", 3, 2, true, false},  // under the limit
      {"OnFailure", 3, 3, true, true},   // reached
      {"Always", 3, 4, true, true},      // past it
      {"ExitCode", 2, 2, true, true},    // ExitCode restarts count too
      {"Never", 1, 5, false, true},      // (reached, but Never restarts are not counted)
      {"OnFailure", 0, 0, true, false},  // limit 0: nothing restarted yet
      {"OnFailure", 0, 1, true, true},   // limit 0: the first restart fails the job
  };
  // clang-format on
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.policy, " limit ", c.limit, " restarts ", c.restarts));
    EXPECT_EQ(CountsTowardBackoffLimit(c.policy), c.counts);
    EXPECT_EQ(BackoffLimitReached(c.limit, c.restarts), c.reached);
  }
}

// The whole pass: one Worker of a running job failed with an exit code.
TEST(RestartRuleTest, ReconcileOfAFailedWorker) {
  struct Case {
    api::v1::JobKind kind;
    const char* policy;
    std::optional<int> exit_code;  // nullopt: the pod failed with no exit code seen
    bool pod_deleted;              // deleted so that the next pass creates it again
    const char* condition;         // Restarting or Failed
  };
  // clang-format off
  const Case cases[] = {
      {api::v1::PYTORCH_JOB, "Always", 0, true, "Restarting"},
      {api::v1::PYTORCH_JOB, "Always", 1, true, "Restarting"},
      {api::v1::PYTORCH_JOB, "Always", 137, true, "Restarting"},
      {api::v1::PYTORCH_JOB, "OnFailure", 1, true, "Restarting"},
      {api::v1::PYTORCH_JOB, "OnFailure", 2, true, "Restarting"},
      {api::v1::PYTORCH_JOB, "OnFailure", 127, true, "Restarting"},
      {api::v1::PYTORCH_JOB, "OnFailure", 255, true, "Restarting"},
      {api::v1::PYTORCH_JOB, "Never", 1, false, "Failed"},
      {api::v1::PYTORCH_JOB, "Never", 137, false, "Failed"},
      {api::v1::PYTORCH_JOB, "Never", 143, false, "Failed"},
      {api::v1::PYTORCH_JOB, "ExitCode", 0, false, "Failed"},
      {api::v1::PYTORCH_JOB, "ExitCode", 1, false, "Failed"},
      {api::v1::PYTORCH_JOB, "ExitCode", 2, false, "Failed"},
      {api::v1::PYTORCH_JOB, "ExitCode", 127, false, "Failed"},
      {api::v1::PYTORCH_JOB, "ExitCode", 128, true, "Restarting"},
      {api::v1::PYTORCH_JOB, "ExitCode", 130, true, "Restarting"},
      {api::v1::PYTORCH_JOB, "ExitCode", 137, true, "Restarting"},
      {api::v1::PYTORCH_JOB, "ExitCode", 143, true, "Restarting"},
      {api::v1::PYTORCH_JOB, "ExitCode", 255, true, "Restarting"},
      {api::v1::PYTORCH_JOB, "ExitCode", std::nullopt, true, "Restarting"},
      {api::v1::TF_JOB, "ExitCode", 1, false, "Failed"},
      {api::v1::TF_JOB, "ExitCode", 143, true, "Restarting"},
      {api::v1::TF_JOB, "OnFailure", 1, true, "Restarting"},
      {api::v1::PADDLE_JOB, "Never", 2, false, "Failed"},
      {api::v1::PADDLE_JOB, "OnFailure", 2, true, "Restarting"},
      // XGBoost restarts only under ExitCode; under OnFailure the pod still goes, the job fails.
      {api::v1::XGBOOST_JOB, "ExitCode", 137, true, "Restarting"},
      {api::v1::XGBOOST_JOB, "ExitCode", 1, false, "Failed"},
      {api::v1::XGBOOST_JOB, "OnFailure", 137, true, "Failed"},
      {api::v1::XGBOOST_JOB, "Never", 137, false, "Failed"},
  };
  // clang-format on
  for (const Case& c : cases) {
    const std::string label = absl::StrCat(std::string(api::v1::FindKind(c.kind)->name), " ",
                                           c.policy, " exit ", c.exit_code ? *c.exit_code : -1);
    SCOPED_TRACE(label);
    model::Job job =
        JobBuilder(c.kind, "ns", "r").Master(1).Workers(2).RestartPolicy(c.policy).Build();
    auto observed = ObservedBuilder(job)
                        .Running("Master", 0)
                        .Running("Worker", 0)
                        .Pod("Worker", 1, PodPhase::kFailed, c.exit_code)
                        .Build();
    auto r = Reconcile(job, observed, kT0, {});
    bool deleted = false;
    for (const model::Action& a : r.actions) {
      if (a.type == model::Action::Type::kDelete && a.object.name == "r-worker-1") deleted = true;
      EXPECT_NE(a.type, model::Action::Type::kCreate);
    }
    EXPECT_EQ(deleted, c.pod_deleted);
    EXPECT_TRUE(HasTrueCondition(r.status, c.condition));
    const std::string other = std::string(c.condition) == "Failed" ? "Restarting" : "Failed";
    EXPECT_FALSE(HasTrueCondition(r.status, other));
  }
}

// runPolicy.backoffLimit over a whole pass: restarts of (Master, Worker 0), Worker 0's phase.
TEST(RestartRuleTest, ReconcileBackoffLimit) {
  struct Case {
    const char* scenario;
    const char* policy;
    std::optional<int> limit;
    int master_restarts;
    int worker_restarts;
    PodPhase worker_phase;
    bool failed;
  };
  // clang-format off
  const Case cases[] = {
      {"under the limit", "OnFailure", 3, 1, 1, PodPhase::kRunning, false},
      {"restarts summed over pods reach it", "OnFailure", 3, 1, 2, PodPhase::kRunning, true},
      {"Always counts", "Always", 2, 0, 2, PodPhase::kRunning, true},
      {"ExitCode counts", "ExitCode", 2, 2, 0, PodPhase::kRunning, true},
      {"Never does not count", "Never", 1, 5, 5, PodPhase::kRunning, false},
      {"limit 0, no restart", "OnFailure", 0, 0, 0, PodPhase::kRunning, false},
      {"limit 0, first restart", "OnFailure", 0, 0, 1, PodPhase::kRunning, true},
      {"no limit", "OnFailure", std::nullopt, 50, 50, PodPhase::kRunning, false},
      {"a succeeded pod's restarts do not count", "OnFailure", 2, 0, 5, PodPhase::kSucceeded, false},
  };
  // clang-format on
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    JobBuilder builder = MakePyTorchJob("ns", "b").Master(1).Workers(1).RestartPolicy(c.policy);
    if (c.limit) builder.BackoffLimit(*c.limit);
    model::Job job = builder.Build();
    auto observed = ObservedBuilder(job)
                        .Running("Master", 0, c.master_restarts)
                        .Pod("Worker", 0, c.worker_phase, std::nullopt, c.worker_restarts)
                        .Build();
    auto r = Reconcile(job, observed, kT0, {});
    EXPECT_EQ(HasTrueCondition(r.status, "Failed"), c.failed);
    if (c.failed) {
      EXPECT_EQ(r.status.conditions().rbegin()->message(),
                "Job b has failed because it has reached the specified backoff limit");
    }
  }
}

}  // namespace
}  // namespace coach::reconcile
