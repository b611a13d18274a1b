#include "operator/reconcile/conditions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1/job_conditions.h"
#include "operator/model/testing/job_builder.h"
#include "operator/model/testing/observed_builder.h"
#include "operator/reconcile/reconciler.h"

// Expected values: kubeflow-v1.md, "Status" and "runPolicy and restarts" (upstream
// v1.9.4's setCondition / filterOutCondition and the suspend, deadline and backoff paths
// of ReconcileJobs).

namespace coach::reconcile {
namespace {

using model::PodPhase;
using ::testing::ElementsAreArray;
using namespace coach::reconcile::testing;  // NOLINT

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);
constexpr char kKind[] = "PyTorchJob";

int Seconds(const google::protobuf::Timestamp& ts) {
  return static_cast<int>(absl::ToInt64Seconds(FromTimestamp(ts) - kT0));
}

// "Type=Status:Reason@transition,update", times in seconds after kT0.
std::vector<std::string> Describe(const model::JobStatus& s) {
  std::vector<std::string> out;
  for (const auto& c : s.conditions()) {
    out.push_back(absl::StrCat(c.type(), "=", c.status(), ":", c.reason(), "@",
                               Seconds(c.last_transition_time()), ",",
                               Seconds(c.last_update_time())));
  }
  return out;
}

void Apply(model::JobStatus& s, const std::string& op, absl::Time now) {
  const std::string m = op + " message";
  if (op == "created") MarkCreated(s, kKind, m, now);
  if (op == "running") MarkRunning(s, kKind, m, now);
  if (op == "restarting") MarkRestarting(s, kKind, m, now);
  if (op == "succeeded") MarkSucceeded(s, kKind, m, now);
  if (op == "failed") MarkFailed(s, kKind, api::v1::kJobFailedReason, m, now);
  if (op == "invalid") MarkFailed(s, kKind, api::v1::kJobFailedValidationReason, m, now);
  if (op == "suspended") MarkSuspended(s, kKind, m, now);
  if (op == "resumed") MarkResumed(s, kKind, m, now);
}

TEST(ConditionsTest, Transitions) {
  struct Case {
    const char* scenario;
    std::vector<std::string> ops;  // op i happens at kT0 + i seconds
    std::vector<std::string> want;
    std::optional<int> completion;  // completionTime, seconds after kT0
    std::optional<int> start;       // startTime
  };
  // clang-format off
  const Case cases[] = {
      {"created", {"created"}, {"Created=True:PyTorchJobCreated@0,0"}, {}, {}},
      {"same status and reason: no-op", {"running", "running", "running"}, {"Running=True:PyTorchJobRunning@0,0"}, {}, {}},
      {"restarting replaces running", {"created", "running", "restarting"}, {"Created=True:PyTorchJobCreated@0,0", "Restarting=True:PyTorchJobRestarting@2,2"}, {}, {}},
      {"running replaces restarting", {"created", "restarting", "running"}, {"Created=True:PyTorchJobCreated@0,0", "Running=True:PyTorchJobRunning@2,2"}, {}, {}},
      {"succeeded turns running false", {"created", "running", "succeeded"}, {"Created=True:PyTorchJobCreated@0,0", "Running=False:PyTorchJobRunning@2,2", "Succeeded=True:PyTorchJobSucceeded@2,2"}, 2, {}},
      {"failed turns running false", {"created", "running", "failed"}, {"Created=True:PyTorchJobCreated@0,0", "Running=False:PyTorchJobRunning@2,2", "Failed=True:PyTorchJobFailed@2,2"}, 2, {}},
      {"failed leaves restarting as it was", {"created", "restarting", "failed"}, {"Created=True:PyTorchJobCreated@0,0", "Restarting=True:PyTorchJobRestarting@1,1", "Failed=True:PyTorchJobFailed@2,2"}, 2, {}},
      {"failed validation", {"created", "invalid"}, {"Created=True:PyTorchJobCreated@0,0", "Failed=True:PyTorchJobFailedValidation@1,1"}, 1, {}},
      {"failed is final", {"created", "failed", "running", "succeeded", "suspended"}, {"Created=True:PyTorchJobCreated@0,0", "Failed=True:PyTorchJobFailed@1,1"}, 1, {}},
      {"completion time is set once", {"created", "succeeded", "succeeded"}, {"Created=True:PyTorchJobCreated@0,0", "Succeeded=True:PyTorchJobSucceeded@1,1"}, 1, {}},
      {"suspend a running job", {"created", "running", "suspended"}, {"Created=True:PyTorchJobCreated@0,0", "Running=False:PyTorchJobSuspended@2,2", "Suspended=True:PyTorchJobSuspended@2,2"}, {}, {}},
      {"suspend a job not running", {"created", "suspended"}, {"Created=True:PyTorchJobCreated@0,0", "Suspended=True:PyTorchJobSuspended@1,1"}, {}, {}},
      {"suspended twice: no-op", {"created", "suspended", "suspended"}, {"Created=True:PyTorchJobCreated@0,0", "Suspended=True:PyTorchJobSuspended@1,1"}, {}, {}},
      {"resume resets startTime", {"created", "running", "suspended", "resumed"}, {"Created=True:PyTorchJobCreated@0,0", "Running=False:PyTorchJobSuspended@2,2", "Suspended=False:PyTorchJobResumed@3,3"}, {}, 3},
      {"running again after resume", {"created", "running", "suspended", "resumed", "running"}, {"Created=True:PyTorchJobCreated@0,0", "Suspended=False:PyTorchJobResumed@3,3", "Running=True:PyTorchJobRunning@4,4"}, {}, 3},
      {"suspended again after resume", {"created", "suspended", "resumed", "suspended"}, {"Created=True:PyTorchJobCreated@0,0", "Suspended=True:PyTorchJobSuspended@3,3"}, {}, 2},
  };
  // clang-format on
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    model::JobStatus s;
    for (size_t i = 0; i < c.ops.size(); ++i) Apply(s, c.ops[i], kT0 + absl::Seconds(i));
    EXPECT_THAT(Describe(s), ElementsAreArray(c.want));
    EXPECT_EQ(s.has_completion_time(), c.completion.has_value());
    if (c.completion) {
      EXPECT_EQ(Seconds(s.completion_time()), *c.completion);
    }
    EXPECT_EQ(s.has_start_time(), c.start.has_value());
    if (c.start) {
      EXPECT_EQ(Seconds(s.start_time()), *c.start);
    }
  }
}

// Same status, another reason: the condition is rewritten (update time moves) but it did
// not transition (transition time stays).
TEST(ConditionsTest, ReasonChangeKeepsTransitionTime) {
  model::JobStatus s;
  UpdateCondition(s, kKind, "Suspended", "False", "Resumed", "m", kT0);
  UpdateCondition(s, kKind, "Suspended", "False", "Other", "m2", kT0 + absl::Seconds(4));
  EXPECT_THAT(Describe(s), ElementsAreArray({"Suspended=False:PyTorchJobOther@0,4"}));
  EXPECT_EQ(s.conditions(0).message(), "m2");
}

// The conditions one pass of the reconciler writes, from a job that was Created and Running.
TEST(ConditionsTest, ReconcilePasses) {
  struct Case {
    const char* scenario;
    model::Job job;
    model::ObservedState observed;
    int now;                        // seconds after kT0
    std::vector<std::string> want;  // "Type=Status:Reason"
    std::string message;            // of the last condition
  };
  auto running = [](JobBuilder b) {
    return b.Workers(2).StartTime(kT0).Condition("Created", "True").Condition("Running", "True");
  };
  const model::Job deadline = running(MakeJAXJob("ns", "d").ActiveDeadlineSeconds(100)).Build();
  const model::Job backoff =
      running(MakeJAXJob("ns", "b").RestartPolicy("OnFailure").BackoffLimit(2)).Build();
  const model::Job suspend = running(MakeJAXJob("ns", "s").Suspend(true)).Build();
  const model::Job plain = running(MakeJAXJob("ns", "p")).Build();
  const model::Job never = running(MakeJAXJob("ns", "n")).Build();  // JAX default: Never
  const auto all_running = [](const model::Job& j) {
    return ObservedBuilder(j).All(PodPhase::kRunning).Build();
  };
  // clang-format off
  const Case cases[] = {
      {"before the deadline", deadline, all_running(deadline), 99, {"Created=True:", "Running=True:"}, ""},
      {"deadline reached", deadline, all_running(deadline), 100, {"Created=True:", "Running=False:", "Failed=True:JAXJobFailed"}, "Job d has failed because it was active longer than specified deadline"},
      {"backoff limit exceeded", backoff, ObservedBuilder(backoff).Running("Worker", 0, 1).Running("Worker", 1, 1).Build(), 1, {"Created=True:", "Running=False:", "Failed=True:JAXJobFailed"}, "Job b has failed because it has reached the specified backoff limit"},
      {"replica failed under Never", never, ObservedBuilder(never).Running("Worker", 0).Failed("Worker", 1, 1).Build(), 1, {"Created=True:", "Running=False:", "Failed=True:JAXJobFailed"}, "JAXJob n is failed because 1 Worker replica(s) failed."},
      {"suspended", suspend, all_running(suspend), 1, {"Created=True:", "Running=False:JAXJobSuspended", "Suspended=True:JAXJobSuspended"}, "JAXJob s is suspended."},
      {"all workers succeeded", plain, ObservedBuilder(plain).Succeeded("Worker", 0).Succeeded("Worker", 1).Build(), 1, {"Created=True:", "Running=False:", "Succeeded=True:JAXJobSucceeded"}, "JAXJob ns/p successfully completed."},
  };
  // clang-format on
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    auto r = Reconcile(c.job, c.observed, kT0 + absl::Seconds(c.now), {});
    ASSERT_EQ(r.status.conditions_size(), static_cast<int>(c.want.size()));
    for (size_t i = 0; i < c.want.size(); ++i) {
      const auto& cond = r.status.conditions(static_cast<int>(i));
      EXPECT_THAT(absl::StrCat(cond.type(), "=", cond.status(), ":", cond.reason()),
                  ::testing::StartsWith(c.want[i]));
    }
    if (!c.message.empty()) {
      EXPECT_EQ(r.status.conditions().rbegin()->message(), c.message);
    }
  }
}

// Resuming a suspended job: Suspended=False (Resumed), startTime is the resumption.
TEST(ConditionsTest, ReconcileResume) {
  model::Job job = MakeJAXJob("ns", "s")
                       .Workers(1)
                       .StartTime(kT0)
                       .Condition("Created", "True", kT0)
                       .Condition("Suspended", "True", kT0)
                       .Build();
  auto r = Reconcile(job, {}, kT0 + absl::Seconds(30), {});
  EXPECT_THAT(Describe(r.status), ElementsAreArray({"Created=True:JAXJobCreated@0,0",
                                                    "Suspended=False:JAXJobResumed@30,30"}));
  EXPECT_EQ(Seconds(r.status.start_time()), 30);
}

}  // namespace
}  // namespace coach::reconcile
