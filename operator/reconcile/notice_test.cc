#include "operator/reconcile/notice.h"

#include <gtest/gtest.h>

#include "operator/model/testing/job_builder.h"

namespace coach::reconcile {
namespace {

using model::ObservedCheckpoint;
using model::ObservedPod;
using model::PodPhase;

const absl::Time kNow = absl::FromUnixSeconds(1000);

ObservedPod Running(const std::string& name, const std::string& type, int index) {
  ObservedPod pod;
  pod.name = name;
  pod.replica_type = type;
  pod.index = index;
  pod.phase = PodPhase::kRunning;
  pod.progress = ObservedPod::Progress{};  // coach-launch reports
  return pod;
}

class NoticeTest : public ::testing::Test {
 protected:
  NoticeTest() {
    config_.checkpoint_on_notice = true;
    pods_ = {Running("j-master-0", "Master", 0), Running("j-worker-0", "Worker", 0)};
    pods_[1].notice = "Karpenter is disrupting node spot-1";
  }
  NoticeDecision Decide(const std::optional<ObservedCheckpoint>& checkpoint) {
    return DecideOnNotice(job_, pods_, /*attempt_running=*/true, checkpoint, config_, kNow);
  }
  model::Job job_ = testing::MakePyTorchJob("ns", "j").Master(1).Workers(1).Build();
  model::ReconcileConfig config_;
  std::vector<ObservedPod> pods_;
};

TEST_F(NoticeTest, ANoticeAsksForACheckpointWithinItsGrace) {
  NoticeDecision d = Decide(std::nullopt);
  ASSERT_EQ(d.kind, NoticeDecision::Kind::kRequest);
  EXPECT_EQ(d.grace, absl::Seconds(60));
  EXPECT_EQ(d.pod, &pods_[1]);
  // A deletion's grace is the notice's own deadline; bounded both ways.
  pods_[1].notice_deadline = kNow + absl::Seconds(25);
  EXPECT_EQ(Decide(std::nullopt).grace, absl::Seconds(25));
  pods_[1].notice_deadline = kNow + absl::Hours(1);
  EXPECT_EQ(Decide(std::nullopt).grace, absl::Seconds(120));
  pods_[1].notice_deadline = kNow - absl::Seconds(5);
  EXPECT_EQ(Decide(std::nullopt).grace, absl::Seconds(1));
}

TEST_F(NoticeTest, TheJobWaitsForEveryRunningPodThenRestarts) {
  ObservedCheckpoint checkpoint;
  checkpoint.id = 7;
  checkpoint.deadline = kNow + absl::Seconds(30);
  checkpoint.answers["j-worker-0"] = {true, 142, ""};
  NoticeDecision d = Decide(checkpoint);
  EXPECT_EQ(d.kind, NoticeDecision::Kind::kWait);
  EXPECT_EQ(d.until, checkpoint.deadline);
  checkpoint.answers["j-master-0"] = {true, 142, ""};
  d = Decide(checkpoint);
  ASSERT_EQ(d.kind, NoticeDecision::Kind::kRestart);
  EXPECT_EQ(d.why,
            "Worker replica 0 got notice (Karpenter is disrupting node spot-1); every rank saved "
            "a checkpoint at step 142");
}

// An evicted pod: its ranks save, then its SIGTERM ends them, and the pod fails as it goes. It
// answered, so the job restarts for the notice; a pod that failed without saving is a failure.
TEST_F(NoticeTest, APodThatSavedAndThenEndedIsPartOfTheAnswer) {
  ObservedCheckpoint checkpoint;
  checkpoint.id = 7;
  checkpoint.deadline = kNow + absl::Seconds(30);
  checkpoint.answers["j-worker-0"] = {true, 142, ""};
  checkpoint.answers["j-master-0"] = {true, 142, ""};
  pods_[1].phase = PodPhase::kFailed;
  NoticeDecision d = Decide(checkpoint);
  ASSERT_EQ(d.kind, NoticeDecision::Kind::kRestart);
  EXPECT_EQ(d.pod, &pods_[1]);
  EXPECT_EQ(d.why,
            "Worker replica 0 got notice (Karpenter is disrupting node spot-1); every rank saved "
            "a checkpoint at step 142");
  checkpoint.answers["j-worker-0"] = {false, 0, "no --checkpoint-dir"};
  EXPECT_EQ(Decide(checkpoint).kind, NoticeDecision::Kind::kNone);
}

TEST_F(NoticeTest, OutOfTimeOrUnsavedStillRestartsAndSaysWhy) {
  ObservedCheckpoint checkpoint;
  checkpoint.deadline = kNow;
  checkpoint.answers["j-worker-0"] = {true, 142, ""};
  NoticeDecision d = Decide(checkpoint);
  ASSERT_EQ(d.kind, NoticeDecision::Kind::kRestart);
  EXPECT_NE(d.why.find("no checkpoint from j-master-0 by the deadline"), std::string::npos)
      << d.why;
  checkpoint.answers["j-master-0"] = {false, 0, "no --checkpoint-dir"};
  d = Decide(checkpoint);
  EXPECT_NE(d.why.find("not saved: j-master-0: no --checkpoint-dir"), std::string::npos) << d.why;
  checkpoint.answers["j-master-0"] = {true, 141, ""};
  d = Decide(checkpoint);
  EXPECT_NE(d.why.find("different steps (141, 142)"), std::string::npos) << d.why;
}

TEST_F(NoticeTest, NothingToDoWithoutANoticeOrWhereNoAnswerCanCome) {
  ObservedCheckpoint none;
  pods_[1].notice.clear();
  EXPECT_EQ(Decide(std::nullopt).kind, NoticeDecision::Kind::kNone);
  pods_[1].notice = "deleted: 30s of grace";
  // A pod without coach-launch's reports would never answer.
  pods_[0].progress.reset();
  EXPECT_EQ(Decide(std::nullopt).kind, NoticeDecision::Kind::kNone);
  pods_[0].launch = ObservedPod::Launch{};
  EXPECT_EQ(Decide(std::nullopt).kind, NoticeDecision::Kind::kRequest);
  // A failed pod: the other rules decide.
  pods_[0].phase = PodPhase::kFailed;
  EXPECT_EQ(Decide(std::nullopt).kind, NoticeDecision::Kind::kNone);
  pods_[0].phase = PodPhase::kRunning;
  config_.checkpoint_on_notice = false;
  EXPECT_EQ(Decide(std::nullopt).kind, NoticeDecision::Kind::kNone);
  config_.checkpoint_on_notice = true;
  EXPECT_EQ(
      DecideOnNotice(job_, pods_, /*attempt_running=*/false, std::nullopt, config_, kNow).kind,
      NoticeDecision::Kind::kNone);
}

// Behind coach-launch with reports, a replica that prints no progress reports seldom (its
// heartbeat): the job's own wiring says it answers.
TEST_F(NoticeTest, ALauncherJobActsBeforeEveryPodReported) {
  pods_[0].progress.reset();
  EXPECT_EQ(Decide(std::nullopt).kind, NoticeDecision::Kind::kNone);
  (*job_.mutable_metadata()->mutable_annotations())["coach.dev/launcher"] = "true";
  (*job_.mutable_metadata()->mutable_annotations())["coach.dev/restart-scope"] = "Job";
  config_.progress_report_address = "coach.coach.svc:7450";
  EXPECT_EQ(Decide(std::nullopt).kind, NoticeDecision::Kind::kRequest);
}

}  // namespace
}  // namespace coach::reconcile
