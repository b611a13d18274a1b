#include "operator/reconcile/recovery_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/model/testing/job_builder.h"

namespace coach::reconcile {
namespace {

using ::testing::HasSubstr;
using namespace coach::reconcile::testing;  // NOLINT

JobBuilder Job() { return MakePyTorchJob("ns", "j").Master(1).Workers(2); }

TEST(RecoveryPolicyTest, DefaultsAreUpstreams) {
  auto p = ParseRecoveryPolicy(Job().Build(), {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->scope, RestartScope::kReplica);
  EXPECT_FALSE(p->max_restarts.has_value());
  EXPECT_TRUE(p->max_restarts_by_type.empty());
  EXPECT_FALSE(p->progress_deadline.has_value());
  EXPECT_FALSE(JobScoped(Job().Build(), {}));
}

TEST(RecoveryPolicyTest, ReadsEveryAnnotation) {
  auto p = ParseRecoveryPolicy(Job()
                                   .BackoffLimit(7)
                                   .Annotation("coach.dev/restart-scope", "Job")
                                   .Annotation("coach.dev/max-restarts", "3")
                                   .Annotation("coach.dev/max-restarts-worker", "2")
                                   .Annotation("coach.dev/progress-deadline", "1m30s")
                                   .Build(),
                               {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->scope, RestartScope::kJob);
  EXPECT_EQ(p->max_restarts, 3);
  EXPECT_EQ(p->max_restarts_by_type.at("Worker"), 2);
  EXPECT_EQ(p->progress_deadline, absl::Seconds(90));
}

TEST(RecoveryPolicyTest, BackoffLimitIsTheBudgetWithoutMaxRestarts) {
  auto p = ParseRecoveryPolicy(Job().BackoffLimit(4).Build(), {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->max_restarts, 4);
}

TEST(RecoveryPolicyTest, OperatorDefaultAppliesToPyTorchJobsOnly) {
  model::ReconcileConfig config;
  config.pytorch_job_scope_default = true;
  EXPECT_TRUE(JobScoped(Job().Build(), config));
  EXPECT_FALSE(JobScoped(Job().Annotation("coach.dev/restart-scope", "Replica").Build(), config));
  EXPECT_FALSE(JobScoped(MakeTFJob("ns", "t").Workers(2).Build(), config));
}

TEST(RecoveryPolicyTest, BadAnnotationsNameTheAnnotation) {
  struct Case {
    const char* key;
    const char* value;
    const char* message;
  };
  const Case cases[] = {
      {"coach.dev/restart-scope", "job",
       "metadata.annotations[coach.dev/restart-scope]: must be \"Job\" or \"Replica\", got "
       "\"job\""},
      {"coach.dev/max-restarts", "-1",
       "metadata.annotations[coach.dev/max-restarts]: must be an integer from 0 to 1000, got "
       "\"-1\""},
      {"coach.dev/max-restarts", "1001", "from 0 to 1000"},
      {"coach.dev/max-restarts", "+3", "got \"+3\""},
      {"coach.dev/max-restarts-ps", "1",
       "metadata.annotations[coach.dev/max-restarts-ps]: names no replica type of this job; its "
       "types are master, worker"},
      {"coach.dev/progress-deadline", "5s",
       "metadata.annotations[coach.dev/progress-deadline]: must be a duration from 10s to 168h"},
      {"coach.dev/progress-deadline", "soon", "got \"soon\""},
      {"coach.dev/progress-deadline", "169h", "got \"169h\""},
      {"coach.dev/restart-mode", "inplace",
       "metadata.annotations[coach.dev/restart-mode]: must be \"InPlace\" or \"Recreate\", "
       "got \"inplace\""},
  };
  for (const Case& c : cases) {
    absl::Status s = ValidateRecoveryAnnotations(Job().Annotation(c.key, c.value).Build());
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.key << "=" << c.value;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message)) << c.key << "=" << c.value;
  }
}

TEST(RecoveryPolicyTest, RestartModeInPlaceIsForWholeJobRestarts) {
  auto in_place = ParseRecoveryPolicy(Job()
                                          .Annotation("coach.dev/restart-scope", "Job")
                                          .Annotation("coach.dev/restart-mode", "InPlace")
                                          .Build(),
                                      {});
  ASSERT_TRUE(in_place.ok()) << in_place.status();
  EXPECT_TRUE(in_place->in_place);
  // The operator's PyTorchJob default makes it job-scoped without the scope annotation.
  model::ReconcileConfig job_default;
  job_default.pytorch_job_scope_default = true;
  const model::Job unscoped = Job().Annotation("coach.dev/restart-mode", "InPlace").Build();
  EXPECT_TRUE(ParseRecoveryPolicy(unscoped, job_default)->in_place);
  EXPECT_FALSE(ParseRecoveryPolicy(unscoped, {})->in_place);
  EXPECT_TRUE(ValidateRecoveryAnnotations(unscoped).ok());
  // Pods are told only where the operator takes the reports that carry the restart.
  EXPECT_FALSE(RestartsInPlace(unscoped, job_default));
  job_default.progress_report_address = "coach-operator:7450";
  EXPECT_TRUE(RestartsInPlace(unscoped, job_default));

  absl::Status replica =
      ValidateRecoveryAnnotations(Job()
                                      .Annotation("coach.dev/restart-scope", "Replica")
                                      .Annotation("coach.dev/restart-mode", "InPlace")
                                      .Build());
  EXPECT_THAT(std::string(replica.message()),
              HasSubstr("metadata.annotations[coach.dev/restart-mode]: InPlace restarts the "
                        "whole job; it needs coach.dev/restart-scope: Job, not Replica"));
}

}  // namespace
}  // namespace coach::reconcile
