// A deleted job's record in its MLflow run, and the records and logs found again from the runs
// (mlflow_history.cc), against the fake MLflow.
#include <gtest/gtest.h>

#include "operator/history/history_record.h"
#include "operator/tracking/mlflow_tracker.h"
#include "operator/tracking/testing/mlflow_tracker_fixture.h"

namespace coach::tracking {
namespace {

using mlflow::RunStatus;
using testing::MlflowTrackerTest;
using Method = mlflow::testing::FakeTrackingClient::Method;

class MlflowHistoryTest : public MlflowTrackerTest {
 protected:
  // The job as tracked: seen running until its run id is on it.
  model::Job Tracked(MlflowTracker& tracker, model::Job job) {
    tracker.JobSeen(job);
    EXPECT_TRUE(tracker.WaitIdle(absl::Seconds(10)));
    return WithRunId(std::move(job), RunIdAnnotation(job.metadata().uid()));
  }
  api::v1::JobHistory RecordIn(const std::string& run_id) {
    auto json = fake_.DownloadArtifact(run_id, kRecordArtifact);
    EXPECT_TRUE(json.ok()) << json.status();
    auto record = history::ParseRecordJson("test", json.value_or(""));
    EXPECT_TRUE(record.ok()) << record.status();
    return record.value_or(api::v1::JobHistory());
  }
};

TEST_F(MlflowHistoryTest, ADeletedJobsRunKeepsItsRecordWithEveryKeptLogListed) {
  auto tracker = NewTracker();
  model::Job job = Running(Job("del", "uid-del"));
  job.mutable_status()->mutable_coach()->set_attempt(1);
  job = Tracked(*tracker, job);
  tracker->KeepLogs(job, 0, {{"worker-0", "attempt 0\n"}});
  tracker->JobDeleting(job);
  tracker->KeepRecord(history::NewRecord(job, absl::FromUnixSeconds(1000)), /*read_logs=*/false);
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));

  mlflow::Run run = OnlyRun("uid-del");
  EXPECT_EQ(run.info.status, RunStatus::kKilled);
  EXPECT_EQ(run.tags[kDeletedTag], "true");
  EXPECT_EQ(run.tags[kDeletedByTag], "deleted");
  EXPECT_EQ(run.tags[kDeletedTimeTag], "1970-01-01T00:16:40Z");
  api::v1::JobHistory kept = RecordIn(run.info.run_id);
  EXPECT_EQ(kept.job().metadata().uid(), "uid-del");
  EXPECT_EQ(
      std::vector<std::string>(kept.logs().begin(), kept.logs().end()),
      (std::vector<std::string>{"attempt-0/worker-0", "attempt-1/master-0", "attempt-1/worker-0"}));

  bool truncated = true;
  auto listed = tracker->ListDeleted("ns", "", 10, &truncated);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_FALSE(truncated);
  EXPECT_EQ((*listed)[0].job().metadata().name(), "del");
  EXPECT_TRUE(tracker->ListDeleted("other", "", 10, &truncated)->empty());
  EXPECT_TRUE(tracker->ListDeleted("ns", "someone-else", 10, &truncated)->empty());
  auto by_uid = tracker->DeletedRecord("ns", "del", "uid-del");
  ASSERT_TRUE(by_uid.ok()) << by_uid.status();
  EXPECT_EQ(by_uid->logs_size(), 3);
  EXPECT_TRUE(absl::IsNotFound(tracker->DeletedRecord("ns", "del", "uid-other").status()));
  // The replicas of an attempt are those the run lists, pod or no pod.
  auto replicas = tracker->ReplicasOf(by_uid->job(), 1);
  ASSERT_TRUE(replicas.ok()) << replicas.status();
  EXPECT_EQ(*replicas, (std::vector<std::string>{"master-0", "worker-0"}));
  EXPECT_EQ(*tracker->ReadLog(by_uid->job(), 0, "worker-0"), "attempt 0\n");
}

TEST_F(MlflowHistoryTest, AJobDeletedAfterItsRunEndedIsRecordedInThatRun) {
  auto tracker = NewTracker();
  model::Job job = Tracked(*tracker, Finished(Job("ttl", "uid-ttl"), true));
  job.mutable_spec()->mutable_run_policy()->set_ttl_seconds_after_finished(5);
  tracker->JobDeleting(job);
  tracker->KeepRecord(history::NewRecord(job, absl::FromUnixSeconds(300)), /*read_logs=*/false);
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(fake_.Calls(Method::kCreateRun), 1);
  mlflow::Run run = OnlyRun("uid-ttl");
  EXPECT_EQ(run.info.status, RunStatus::kFinished);
  EXPECT_EQ(run.tags[kDeletedByTag], "ttl");
  EXPECT_EQ(RecordIn(run.info.run_id).logs_size(), 2);  // attempt-0's master-0 and worker-0
}

// kubectl deleted it: nobody read its pods' logs at the deletion, so the tracker does.
TEST_F(MlflowHistoryTest, AJobDeletedWithKubectlHasItsLogsReadForTheRun) {
  auto tracker = NewTracker();
  model::Job job = Tracked(*tracker, Running(Job("gone", "uid-gone")));
  tracker->KeepRecord(history::NewRecord(job, absl::FromUnixSeconds(300)), /*read_logs=*/true);
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  mlflow::Run run = OnlyRun("uid-gone");
  EXPECT_EQ(run.info.status, RunStatus::kKilled);
  EXPECT_EQ(*fake_.DownloadArtifact(run.info.run_id, "logs/attempt-0/master-0.log"),
            "log of gone master\n");
  EXPECT_EQ(run.tags[kDeletedTag], "true");
}

// A run's artifacts and tags are its training code's to write too: a record that is not the one
// asked for, or not a record, is left out; the others are still listed.
TEST_F(MlflowHistoryTest, RecordsThatDoNotMatchTheirTagsAreLeftOut) {
  auto tracker = NewTracker();
  model::Job job = Tracked(*tracker, Running(Job("real", "uid-real")));
  tracker->JobDeleting(job);
  tracker->KeepRecord(history::NewRecord(job, absl::FromUnixSeconds(300)), false);
  ASSERT_TRUE(tracker->WaitIdle(absl::Seconds(10)));
  const std::string experiment = *fake_.GetOrCreateExperiment("exp");
  auto plant = [&](const std::string& ns, const std::string& content) {
    mlflow::CreateRunRequest create;
    create.experiment_id = experiment;
    create.tags = {{kDeletedTag, "true"}, {"coach.namespace", ns}, {"coach.job_uid", "uid-x"}};
    auto run = fake_.CreateRun(create);
    ASSERT_TRUE(run.ok());
    ASSERT_TRUE(fake_.UploadArtifact(run->run_id, kRecordArtifact, content).ok());
  };
  model::Job elsewhere = Job("forged", "uid-x");
  elsewhere.mutable_metadata()->set_namespace_("attacker");
  plant("ns", *history::RecordJson(history::NewRecord(elsewhere, absl::FromUnixSeconds(9))));
  plant("ns", "not a record");
  bool truncated = false;
  auto listed = tracker->ListDeleted("ns", "", 10, &truncated);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].job().metadata().uid(), "uid-real");
  EXPECT_TRUE(absl::IsNotFound(tracker->DeletedRecord("ns", "forged", "uid-x").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      tracker->ListDeleted("ns' OR tags.x = 'y", "", 10, &truncated).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(tracker->DeletedRecord("ns", "real", "uid'x").status()));
}

TEST_F(MlflowHistoryTest, WithNoTrackingServerKnownNothingIsListed) {
  auto tracker =
      NewTracker(true, nullptr, [](MlflowTrackerOptions* o) { o->mlflow.tracking_uri.clear(); });
  bool truncated = false;
  EXPECT_TRUE(absl::IsFailedPrecondition(tracker->ListDeleted("", "", 10, &truncated).status()));
}

}  // namespace
}  // namespace coach::tracking
