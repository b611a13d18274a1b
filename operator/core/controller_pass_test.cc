// What one pass asks of the work queue (PassResult), for each reason it has: passes run on the
// test's thread by ReconcileKey over a controller that was never started (no worker, so the
// queue is never touched), with the real SqliteJobStore, a FakeBackend and a FakeClock.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "operator/core/controller.h"
#include "operator/core/testing/core_fixture.h"

namespace coach::core {

// gtest prints a PassResult as its reasons (found by argument-dependent lookup).
void PrintTo(const PassResult& result, std::ostream* os) { *os << result.ToString(); }

namespace {

using model::PodPhase;
using testing::CoreEnv;
using testing::PyTorchManifest;
using Requeue = PassResult::Requeue;
using Wake = PassResult::Wake;

// The fixture's store, except that a status write can be made to lose a race: before it, the
// job is changed behind the controller's back (as Suspend would), so the real store answers
// Aborted.
class RacingStore : public store::JobStore {
 public:
  explicit RacingStore(store::JobStore* inner) : inner_(inner) {}

  void RaceNextStatusWrite() {
    absl::MutexLock lock(&mu_);
    race_ = true;
  }

  absl::StatusOr<api::v1::TrainingJob> Create(const api::v1::TrainingJob& job) override {
    return inner_->Create(job);
  }
  absl::StatusOr<api::v1::TrainingJob> Get(const JobKey& key) override { return inner_->Get(key); }
  absl::StatusOr<api::v1::TrainingJob> GetCached(const JobKey& key) override {
    return inner_->GetCached(key);
  }
  absl::StatusOr<store::ListResult> List(const store::ListOptions& options) override {
    return inner_->List(options);
  }
  absl::StatusOr<api::v1::TrainingJob> Update(const api::v1::TrainingJob& job) override {
    return inner_->Update(job);
  }
  absl::StatusOr<api::v1::TrainingJob> UpdateStatus(const api::v1::TrainingJob& job) override {
    bool race;
    {
      absl::MutexLock lock(&mu_);
      race = std::exchange(race_, false);
    }
    if (race) {
      absl::StatusOr<api::v1::TrainingJob> current = inner_->Get(store::KeyOf(job));
      if (!current.ok()) return current.status();
      (*current->mutable_metadata()->mutable_labels())["changed"] = "meanwhile";
      absl::StatusOr<api::v1::TrainingJob> changed = inner_->Update(*current);
      if (!changed.ok()) return changed.status();
    }
    return inner_->UpdateStatus(job);
  }
  absl::Status Delete(const JobKey& key, std::optional<std::string> version) override {
    return inner_->Delete(key, std::move(version));
  }
  absl::Status AppendEvent(const JobKey& key, const store::JobEvent& event) override {
    return inner_->AppendEvent(key, event);
  }
  absl::Status AppendEvents(const JobKey& key,
                            const std::vector<store::JobEvent>& events) override {
    return inner_->AppendEvents(key, events);
  }
  absl::StatusOr<std::vector<store::JobEvent>> ListEvents(const JobKey& key) override {
    return inner_->ListEvents(key);
  }

 private:
  store::JobStore* const inner_;
  absl::Mutex mu_;
  bool race_ ABSL_GUARDED_BY(mu_) = false;
};

// Holds every job's first replicas until `hold` (none: never).
class HoldingObserver : public JobObserver {
 public:
  void JobSeen(const model::Job&) override {}
  void JobDeleting(const model::Job&) override {}
  std::optional<absl::Time> HoldStartUntil(const model::Job&) override { return hold; }

  std::optional<absl::Time> hold;
};

class ControllerPassTest : public ::testing::Test {
 protected:
  ControllerPassTest() : store_(env_.store.get()) {
    Controller::Options options;
    options.workers = 1;
    options.observer = &observer_;
    options.forget_finished_jobs = true;
    controller_ =
        std::make_unique<Controller>(&store_, &env_.backend, env_.service.get(), &env_.watchers,
                                     &env_.job_locks, &env_.clock, &env_.metrics, options);
  }

  // Creates the job; returns its key (with its kind).
  JobKey Create(const std::string& manifest) {
    absl::StatusOr<api::v1::TrainingJob> created = env_.Create(manifest);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? store::KeyOf(*created) : JobKey{};
  }

  // One pass that must succeed.
  PassResult Pass(const JobKey& key) {
    absl::StatusOr<PassResult> result = controller_->ReconcileKey(key);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : PassResult::Done();
  }

  PassResult RequeueAt(absl::Time at, Requeue requeue = Requeue::kNo) {
    PassResult result;
    result.requeue = requeue;
    result.wake = Wake::kRequeueAt;
    result.at = at;
    return result;
  }

  CoreEnv env_;
  RacingStore store_;
  HoldingObserver observer_;
  std::unique_ptr<Controller> controller_;
};

TEST_F(ControllerPassTest, ResultsPrintTheirReasons) {
  EXPECT_EQ(PassResult::Done().ToString(), "requeue=no wake=no");
  EXPECT_EQ(PassResult::Again(Requeue::kConflict).ToString(), "requeue=conflict wake=no");
  EXPECT_EQ(PassResult::HeldUntil(absl::FromUnixSeconds(0)).ToString(),
            "requeue=no wake=held@1970-01-01T00:00:00+00:00");
  // `at` means nothing without a wake.
  PassResult stray = PassResult::Done();
  stray.at = absl::FromUnixSeconds(5);
  EXPECT_EQ(stray, PassResult::Done());
  EXPECT_NE(PassResult::HeldUntil(absl::FromUnixSeconds(5)),
            PassResult::HeldUntil(absl::FromUnixSeconds(6)));
}

// Created replicas: the next pass observes them; once nothing changes, nothing is asked.
TEST_F(ControllerPassTest, AppliedActionsRequeueAtOnceThenDone) {
  const JobKey key = Create(PyTorchManifest("applied"));
  const PassResult first = Pass(key);
  EXPECT_EQ(first, PassResult::Again(Requeue::kApplied)) << first.ToString();
  EXPECT_EQ(env_.backend.PodNames("default", "applied").size(), 2u);
  const PassResult second = Pass(key);
  EXPECT_EQ(second, PassResult::Done()) << second.ToString();
  env_.backend.SetAllPods("default", "applied", PodPhase::kRunning);
  const PassResult running = Pass(key);
  EXPECT_EQ(running, PassResult::Done()) << running.ToString();
  EXPECT_TRUE(env_.HasCondition("default", "applied", "Running"));
}

// An active deadline: the reconciler's requeue_at, beside the requeue for what was applied.
TEST_F(ControllerPassTest, AnActiveDeadlineWakesTheKeyAtIt) {
  const JobKey key =
      Create(PyTorchManifest("deadline", 1, "OnFailure", "    activeDeadlineSeconds: 30\n"));
  const absl::Time deadline = env_.clock.Now() + absl::Seconds(30);
  const PassResult first = Pass(key);
  EXPECT_EQ(first, RequeueAt(deadline, Requeue::kApplied)) << first.ToString();
  env_.backend.SetAllPods("default", "deadline", PodPhase::kRunning);
  env_.clock.Advance(absl::Seconds(10));
  const PassResult running = Pass(key);
  EXPECT_EQ(running, RequeueAt(deadline)) << running.ToString();
  EXPECT_EQ(controller_->queue().DelayedCount(), 0u) << "the pass leaves the queue alone";
  env_.clock.Advance(absl::Seconds(20));
  // Failed; under the default cleanPodPolicy (None) nothing is deleted, so nothing is asked.
  const PassResult fired = Pass(key);
  EXPECT_EQ(fired, PassResult::Done()) << fired.ToString();
  EXPECT_TRUE(env_.HasCondition("default", "deadline", "Failed"));
}

// A finished job's TTL: woken when it expires; that pass deletes the job and asks nothing.
TEST_F(ControllerPassTest, ATtlWakesTheKeyThenTheJobIsDeleted) {
  const JobKey key =
      Create(PyTorchManifest("ttl", 1, "OnFailure", "    ttlSecondsAfterFinished: 60\n"));
  EXPECT_EQ(Pass(key), PassResult::Again(Requeue::kApplied));
  env_.backend.SetAllPods("default", "ttl", PodPhase::kSucceeded, 0);
  const PassResult finished = Pass(key);
  EXPECT_EQ(finished, RequeueAt(env_.clock.Now() + absl::Seconds(60))) << finished.ToString();
  env_.clock.Advance(absl::Seconds(61));
  const PassResult deleted = Pass(key);
  EXPECT_EQ(deleted, PassResult::Done()) << deleted.ToString();
  EXPECT_FALSE(env_.store->Get(key).ok());
  EXPECT_EQ(env_.metrics.jobs_ttl_deleted->Value({"default", "pytorch"}), 1);
  // And a pass over a key whose job is gone asks nothing either.
  EXPECT_EQ(Pass(key), PassResult::Done());
}

// The observer holds the first replicas back: the pass stops there and wakes the key at the
// hold's end; a hold already over does not stop it.
TEST_F(ControllerPassTest, AnObserversHoldWakesTheKeyAtItsEnd) {
  const JobKey key = Create(PyTorchManifest("held"));
  const absl::Time until = env_.clock.Now() + absl::Seconds(5);
  observer_.hold = until;
  const PassResult held = Pass(key);
  EXPECT_EQ(held, PassResult::HeldUntil(until)) << held.ToString();
  EXPECT_TRUE(env_.backend.PodNames("default", "held").empty());
  env_.clock.Advance(absl::Seconds(5));
  const PassResult released = Pass(key);
  EXPECT_EQ(released, PassResult::Again(Requeue::kApplied)) << released.ToString();
  EXPECT_EQ(env_.backend.PodNames("default", "held").size(), 2u);
}

// A create refused as invalid: the key is requeued at once, and that pass fails the job.
TEST_F(ControllerPassTest, ACreateRefusedAsInvalidRequeuesAtOnceToFailTheJob) {
  const JobKey key = Create(PyTorchManifest("refused"));
  env_.backend.SetApplyError(absl::InvalidArgumentError("spec.containers: bad"));
  const PassResult refused = Pass(key);
  EXPECT_EQ(refused, PassResult::Again(Requeue::kRefusedCreate)) << refused.ToString();
  env_.backend.SetApplyError(absl::OkStatus());
  const PassResult failed = Pass(key);
  EXPECT_EQ(failed, PassResult::Done()) << failed.ToString();
  EXPECT_TRUE(env_.HasCondition("default", "refused", "Failed"));
  EXPECT_TRUE(env_.backend.PodNames("default", "refused").empty());
}

// The status write lost a race (the job changed meanwhile): requeued at once, to start over.
TEST_F(ControllerPassTest, AStatusConflictRequeuesAtOnce) {
  const JobKey key = Create(PyTorchManifest("conflict"));
  store_.RaceNextStatusWrite();
  const PassResult conflict = Pass(key);
  EXPECT_EQ(conflict, PassResult::Again(Requeue::kConflict)) << conflict.ToString();
  EXPECT_FALSE(env_.HasCondition("default", "conflict", "Created"));
  const PassResult again = Pass(key);  // its pods exist: nothing created twice
  EXPECT_EQ(again, PassResult::Done()) << again.ToString();
  EXPECT_TRUE(env_.HasCondition("default", "conflict", "Created"));
  EXPECT_EQ(env_.backend.CreateCount("default", "conflict"), 2);
}

// A failing pass returns its error (the worker retries the key after its backoff), whether
// admission, observation or a create that a retry may get through failed.
TEST_F(ControllerPassTest, FailuresAreErrorsNotResults) {
  const JobKey key = Create(PyTorchManifest("failing"));
  env_.backend.SetAdmitError(absl::UnavailableError("substrate down"));
  EXPECT_EQ(controller_->ReconcileKey(key).status().code(), absl::StatusCode::kUnavailable);
  env_.backend.SetAdmitError(absl::OkStatus());
  env_.backend.SetObserveError(absl::UnavailableError("substrate down"));
  EXPECT_EQ(controller_->ReconcileKey(key).status().code(), absl::StatusCode::kUnavailable);
  env_.backend.SetObserveError(absl::OkStatus());
  env_.backend.SetApplyError(absl::PermissionDeniedError("quota"));
  EXPECT_EQ(controller_->ReconcileKey(key).status().code(), absl::StatusCode::kPermissionDenied);
  env_.backend.SetApplyError(absl::OkStatus());
  EXPECT_EQ(Pass(key), PassResult::Again(Requeue::kApplied));
}

}  // namespace
}  // namespace coach::core
