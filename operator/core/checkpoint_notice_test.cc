// Checkpoint on notice through the controller (reconcile/notice.h, checkpoint_notice.h): passes
// on the test's thread over a job-scoped PyTorchJob whose pods report through coach-launch, with
// the operator's real CheckpointBook as the channel.

#include "operator/core/checkpoint_notice.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "operator/core/controller.h"
#include "operator/core/testing/core_fixture.h"
#include "operator/server/progress_intake.h"

namespace coach::core {
namespace {

using model::ObservedPod;
using model::PodPhase;
using testing::CoreEnv;
using testing::PyTorchManifest;

class CheckpointNoticeTest : public ::testing::Test {
 protected:
  CheckpointNoticeTest() : book_(BookOptions()) {
    Controller::Options options;
    options.workers = 1;
    options.forget_finished_jobs = true;
    controller_ = std::make_unique<Controller>(env_.store.get(), &env_.backend, env_.service.get(),
                                               &env_.watchers, &env_.job_locks, &env_.clock,
                                               &env_.metrics, options);
    controller_->SetCheckpointChannel(&book_);
  }
  server::CheckpointBookOptions BookOptions() {
    server::CheckpointBookOptions o;
    o.clock = &env_.clock;
    return o;
  }
  // PyTorchJob "ckpt" (Master + Worker) under coach.dev/restart-scope: Job, as key_.
  void CreateJobScoped() {
    const std::string manifest = absl::StrReplaceAll(
        PyTorchManifest("ckpt"),
        {{"  name: ckpt\n", "  name: ckpt\n  annotations:\n    coach.dev/restart-scope: Job\n"}});
    absl::StatusOr<api::v1::TrainingJob> created = env_.Create(manifest);
    ASSERT_TRUE(created.ok()) << created.status();
    key_ = store::KeyOf(*created);
  }
  void Pass(const JobKey& key) {
    absl::StatusOr<PassResult> result = controller_->ReconcileKey(key);
    ASSERT_TRUE(result.ok()) << result.status();
  }
  api::v1::TrainingJob Job() { return *env_.store->Get(key_); }
  // The job's pod as coach-launch-run replicas look: running, reporting progress.
  ObservedPod Replica(const std::string& type, const std::string& lower, int attempt) {
    ObservedPod pod;
    pod.name = "ckpt-" + lower + "-0";
    pod.replica_type = type;
    pod.phase = PodPhase::kRunning;
    pod.attempt = attempt;
    pod.progress = ObservedPod::Progress{120, {}, 4, env_.clock.Now(), std::nullopt};
    return pod;
  }
  void Answer(const std::string& pod, int64_t id, int64_t step) {
    api::v1::CheckpointReport report;
    report.set_request_id(id);
    report.set_saved(true);
    report.set_step(step);
    book_.Answer(Job().metadata().uid(), pod, report);
  }

  CoreEnv env_;
  server::CheckpointBook book_;
  std::unique_ptr<Controller> controller_;
  JobKey key_;
};

TEST_F(CheckpointNoticeTest, RanksSaveOnNoticeThenTheJobRestartsUncounted) {
  ASSERT_NO_FATAL_FAILURE(CreateJobScoped());
  Pass(key_);
  env_.backend.SetPod("default", "ckpt", Replica("Master", "master", 0));
  env_.backend.SetPod("default", "ckpt", Replica("Worker", "worker", 0));
  Pass(key_);
  ASSERT_TRUE(env_.HasCondition("default", "ckpt", "Running"));
  const std::string uid = Job().metadata().uid();
  EXPECT_FALSE(book_.NewestCheckpoint(uid).ok());

  ObservedPod noticed = Replica("Worker", "worker", 0);
  noticed.notice = "Karpenter is disrupting node spot-1";
  env_.backend.SetPod("default", "ckpt", noticed);
  Pass(key_);
  absl::StatusOr<backend::CheckpointState> asked = book_.NewestCheckpoint(uid);
  ASSERT_TRUE(asked.ok()) << asked.status();
  EXPECT_EQ(asked->deadline, env_.clock.Now() + absl::Seconds(60));
  EXPECT_EQ(Job().status().coach().attempt(), 0);  // it waits for the ranks
  Pass(key_);
  EXPECT_EQ(book_.NewestCheckpoint(uid)->id, asked->id) << "asked once";

  Answer("ckpt-master-0", asked->id, 142);
  Answer("ckpt-worker-0", asked->id, 142);
  Pass(key_);
  const api::v1::TrainingJob restarted = Job();
  EXPECT_EQ(restarted.status().coach().attempt(), 1);
  EXPECT_EQ(restarted.status().coach().restarts(), 0) << "a notice spends no budget";
  ASSERT_GE(restarted.status().coach().attempts_size(), 1);
  const api::v1::JobAttempt& first = restarted.status().coach().attempts(0);
  EXPECT_EQ(first.reason(), "Disrupted");
  EXPECT_FALSE(first.counted());
  EXPECT_TRUE(absl::StrContains(first.message(), "every rank saved a checkpoint at step 142"))
      << first.message();
  EXPECT_FALSE(book_.NewestCheckpoint(uid).ok()) << "forgotten with the attempt";
}

// Pods without coach-launch's reports never answer: the notice changes nothing for them.
TEST_F(CheckpointNoticeTest, WithoutReportsANoticeAsksNothing) {
  ASSERT_NO_FATAL_FAILURE(CreateJobScoped());
  Pass(key_);
  ObservedPod master = Replica("Master", "master", 0);
  ObservedPod worker = Replica("Worker", "worker", 0);
  master.progress.reset();
  worker.progress.reset();
  env_.backend.SetPod("default", "ckpt", master);
  env_.backend.SetPod("default", "ckpt", worker);
  Pass(key_);
  worker.notice = "deleted: 30s of grace";
  env_.backend.SetPod("default", "ckpt", worker);
  Pass(key_);
  EXPECT_FALSE(book_.NewestCheckpoint(Job().metadata().uid()).ok());
  EXPECT_EQ(Job().status().coach().attempt(), 0);
}

}  // namespace
}  // namespace coach::core
