// Controller + JobService with the real SqliteJobStore, a FakeBackend and a FakeClock.

#include "operator/core/controller.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "api/v1/kinds.h"
#include "common/status_macros.h"
#include "operator/core/testing/core_fixture.h"
#include "operator/reconcile/conditions.h"

namespace coach::core {
namespace {

using model::PodPhase;
using testing::CoreEnv;
using testing::PyTorchManifest;

std::string Version(CoreEnv& env, const std::string& name) {
  auto job = env.store->Get({"default", name});
  return job.ok() ? job->metadata().resource_version() : "";
}

// Enqueues the job a few times and waits for the queue to drain.
void Churn(CoreEnv& env, const std::string& name) {
  for (int i = 0; i < 3; ++i) {
    env.controller->Enqueue({"default", name});
    ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.controller->queue().Depth() == 0; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

TEST(ControllerTest, CreateMakesPodsThenSucceedsWithOneStatusWrite) {
  CoreEnv env;
  env.StartController();
  ASSERT_TRUE(env.Create(PyTorchManifest("ok", 2)).ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "ok").size() == 3; }));
  EXPECT_EQ(env.backend.CreateCount("default", "ok"), 3);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "ok", "Created"); }));

  env.backend.SetAllPods("default", "ok", PodPhase::kRunning);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "ok", "Running"); }));

  env.backend.SetAllPods("default", "ok", PodPhase::kSucceeded, 0);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "ok", "Succeeded"); }));
  const std::string version = Version(env, "ok");
  Churn(env, "ok");
  EXPECT_EQ(Version(env, "ok"), version) << "a finished job's status is not rewritten";
  EXPECT_EQ(env.metrics.jobs_successful->Value({"default", "pytorch"}), 1);
  EXPECT_EQ(env.metrics.jobs_failed->Value({"default", "pytorch"}), 0);
  EXPECT_EQ(env.backend.CreateCount("default", "ok"), 3);
  auto events = env.store->ListEvents({"default", "ok"});
  ASSERT_TRUE(events.ok());
  EXPECT_FALSE(events->empty());
}

TEST(ControllerTest, ExitCodeRestartRecreatesThePodAndCountsOnce) {
  CoreEnv env;
  env.StartController();
  ASSERT_TRUE(env.Create(PyTorchManifest("ec", 1, "ExitCode")).ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "ec").size() == 2; }));
  env.backend.SetAllPods("default", "ec", PodPhase::kRunning);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "ec", "Running"); }));
  // 137 (SIGKILL) is retryable under ExitCode.
  env.backend.SetPodPhase("default", "ec", "ec-worker-0", PodPhase::kFailed, 137);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.backend.CreateCount("default", "ec") == 3; }));
  ASSERT_TRUE(CoreEnv::WaitFor([&] {
    return env.metrics.jobs_restarted->Value({"default", "pytorch"}) == 1;
  }));
  Churn(env, "ec");
  EXPECT_EQ(env.metrics.jobs_restarted->Value({"default", "pytorch"}), 1);
  EXPECT_FALSE(env.HasCondition("default", "ec", "Failed"));
}

TEST(ControllerTest, PermanentFailureCountsFailedOnce) {
  CoreEnv env;
  env.StartController();
  ASSERT_TRUE(env.Create(PyTorchManifest("bad", 1, "Never")).ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "bad").size() == 2; }));
  env.backend.SetPodPhase("default", "bad", "bad-master-0", PodPhase::kFailed, 1);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "bad", "Failed"); }));
  Churn(env, "bad");
  EXPECT_EQ(env.metrics.jobs_failed->Value({"default", "pytorch"}), 1);
}

TEST(ControllerTest, ActiveDeadlineFiresWithoutAnyEvent) {
  CoreEnv env;
  env.StartController();
  ASSERT_TRUE(
      env.Create(PyTorchManifest("dl", 1, "OnFailure", "    activeDeadlineSeconds: 30\n")).ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "dl").size() == 2; }));
  env.backend.SetAllPods("default", "dl", PodPhase::kRunning);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "dl", "Running"); }));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.controller->queue().DelayedCount() >= 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(env.HasCondition("default", "dl", "Failed"));
  // No pod event from here on: only the timer can notice.
  env.clock.Advance(absl::Seconds(31));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "dl", "Failed"); }));
  ASSERT_TRUE(CoreEnv::WaitFor([&] {
    return env.metrics.jobs_failed->Value({"default", "pytorch"}) == 1;
  }));
}

TEST(ControllerTest, TtlDeletesTheFinishedJob) {
  CoreEnv env;
  env.StartController();
  ASSERT_TRUE(
      env.Create(PyTorchManifest("ttl", 1, "OnFailure", "    ttlSecondsAfterFinished: 60\n")).ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "ttl").size() == 2; }));
  env.backend.SetAllPods("default", "ttl", PodPhase::kSucceeded, 0);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "ttl", "Succeeded"); }));
  auto sub = env.service->Watch("default", "ttl", "");
  ASSERT_TRUE(sub.ok());
  env.clock.Advance(absl::Seconds(61));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return !env.store->Get({"default", "ttl"}).ok(); }));
  ASSERT_TRUE(CoreEnv::WaitFor([&] {
    return env.metrics.jobs_ttl_deleted->Value({"default", "pytorch"}) == 1;
  }));
  EXPECT_EQ(env.metrics.jobs_deleted->Value({"default", "pytorch"}), 1);
  EXPECT_EQ(env.backend.forgotten(), std::vector<std::string>{"default/ttl"});
  bool deleted = false;
  for (int i = 0; i < 5 && !deleted; ++i) {
    auto ev = (*sub)->Next(absl::Seconds(2));
    ASSERT_TRUE(ev.ok());
    deleted = ev->has_value() && (*ev)->type == WatchEventType::kDeleted;
  }
  EXPECT_TRUE(deleted);
}

TEST(ControllerTest, SuspendDeletesPodsResumeRecreates) {
  CoreEnv env;
  env.StartController();
  ASSERT_TRUE(env.Create(PyTorchManifest("sr")).ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "sr").size() == 2; }));
  ASSERT_TRUE(env.service->Suspend("default", "sr").ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "sr").empty(); }));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "sr", "Suspended"); }));
  ASSERT_TRUE(env.service->Resume("default", "sr").ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "sr").size() == 2; }));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return !env.HasCondition("default", "sr", "Suspended"); }));
}

TEST(ControllerTest, DeleteWhileRunning) {
  CoreEnv env;
  env.StartController();
  ASSERT_TRUE(env.Create(PyTorchManifest("del")).ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "del").size() == 2; }));
  ASSERT_TRUE(env.service->Delete("default", "del").ok());
  EXPECT_TRUE(env.backend.PodNames("default", "del").empty());
  Churn(env, "del");
  EXPECT_TRUE(env.backend.PodNames("default", "del").empty());
  EXPECT_FALSE(env.store->Get({"default", "del"}).ok());
}

TEST(ControllerTest, RestartResumesStoredJobsWithoutDuplicatingCreates) {
  CoreEnv env;
  // Accepted while no controller runs (as if the operator died right after storing it).
  ASSERT_TRUE(env.Create(PyTorchManifest("resume")).ok());
  EXPECT_TRUE(env.backend.PodNames("default", "resume").empty());
  env.StartController();
  ASSERT_TRUE(
      CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "resume").size() == 2; }));
  Churn(env, "resume");
  env.StopController();
  EXPECT_TRUE(env.backend.stopped());
  env.StartController();
  Churn(env, "resume");
  EXPECT_EQ(env.backend.CreateCount("default", "resume"), 2);
  // And it keeps driving the job.
  env.backend.SetAllPods("default", "resume", PodPhase::kSucceeded, 0);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "resume", "Succeeded"); }));
}

TEST(ControllerTest, ObserveErrorsAreRetriedWithBackoff) {
  CoreEnv env;
  env.backend.SetObserveError(absl::UnavailableError("substrate down"));
  env.StartController();
  ASSERT_TRUE(env.Create(PyTorchManifest("retry")).ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.metrics.reconcile_total->Value({"error"}) >= 1; }));
  EXPECT_TRUE(env.backend.PodNames("default", "retry").empty());
  env.backend.SetObserveError(absl::OkStatus());
  // The backoff timer runs on the fake clock.
  for (int i = 0; i < 20 && env.backend.PodNames("default", "retry").empty(); ++i) {
    env.clock.Advance(absl::Seconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(
      CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "retry").size() == 2; }));
}

TEST(ControllerTest, WatchSeesControllerChanges) {
  CoreEnv env;
  env.StartController();
  auto sub = env.service->Watch("", "", "");
  ASSERT_TRUE(sub.ok());
  ASSERT_TRUE(env.Create(PyTorchManifest("wc")).ok());
  auto ev = (*sub)->Next(absl::Seconds(5));
  ASSERT_TRUE(ev.ok() && ev->has_value());
  EXPECT_EQ((*ev)->type, WatchEventType::kAdded);
  ev = (*sub)->Next(absl::Seconds(5));
  ASSERT_TRUE(ev.ok() && ev->has_value());
  EXPECT_EQ((*ev)->type, WatchEventType::kModified);  // the Created condition
}

// A store of finished jobs must not cost the controller an admission entry per job;
// the gauges still count a finished job's replicas and state.
TEST(ControllerTest, FinishedJobsAreNotKeptAsAdmittedButStillCounted) {
  CoreEnv env;
  env.StartController();
  ASSERT_TRUE(env.Create(PyTorchManifest("fin", 2)).ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "fin").size() == 3; }));
  EXPECT_EQ(env.controller->Entries().admitted, 1u);
  env.backend.SetAllPods("default", "fin", PodPhase::kSucceeded, 0);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "fin", "Succeeded"); }));
  Churn(env, "fin");
  EXPECT_EQ(env.controller->Entries().admitted, 0u);
  EXPECT_EQ(env.metrics.replicas->Value({"Succeeded"}), 3);
  EXPECT_EQ(env.metrics.replicas->Value({"Running"}), 0);
  EXPECT_EQ(env.metrics.jobs->Value({"Succeeded"}), 1);
  EXPECT_EQ(env.metrics.jobs->Value({"Running"}), 0);
  EXPECT_EQ(env.backend.CreateCount("default", "fin"), 3) << "nothing created again";
}

TEST(ControllerTest, GaugesFollowTheJobs) {
  CoreEnv env;
  env.StartController();
  ASSERT_TRUE(env.Create(PyTorchManifest("g", 2)).ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "g").size() == 3; }));
  env.backend.SetAllPods("default", "g", PodPhase::kRunning);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.metrics.replicas->Value({"Running"}) == 3; }));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.metrics.jobs->Value({"Running"}) == 1; }));
  const std::string text = env.registry.Render();
  EXPECT_NE(text.find("coach_replicas{phase=\"Running\"} 3"), std::string::npos) << text;
  EXPECT_NE(text.find("coach_reconcile_duration_seconds_count"), std::string::npos);
  ASSERT_TRUE(env.service->Delete("default", "g").ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.metrics.replicas->Value({"Running"}) == 0; }));
}

double Replicas(CoreEnv& env, const std::string& phase) {
  return env.metrics.replicas->Value({phase});
}
double Jobs(CoreEnv& env, const std::string& state) { return env.metrics.jobs->Value({state}); }

// With forget_finished_jobs (the local backend) a finished job whose status counts its replicas
// keeps no entry at all: no kind index, no gauge entry, no spec check (memory must
// not grow with a store of finished jobs). It is still counted, and its name still wakes it
// (Churn enqueues by name: the store says the kind).
TEST(ControllerTest, AFinishedJobKeepsNoEntryAndStaysCounted) {
  CoreEnv env;
  ASSERT_TRUE(env.forget_finished_jobs);
  env.StartController();
  ASSERT_TRUE(env.Create(PyTorchManifest("done", 2)).ok());
  ASSERT_TRUE(env.Create(PyTorchManifest("live", 1)).ok());
  ASSERT_TRUE(
      CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "done").size() == 3; }));
  ASSERT_TRUE(
      CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "live").size() == 2; }));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.controller->Entries().gauges == 2; }));
  Controller::PerJobEntries entries = env.controller->Entries();
  EXPECT_EQ(entries.kinds, 2u);
  EXPECT_EQ(entries.spec_checks, 2u);
  EXPECT_EQ(entries.admitted, 2u);

  env.backend.SetAllPods("default", "done", PodPhase::kSucceeded, 0);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "done", "Succeeded"); }));
  Churn(env, "done");
  entries = env.controller->Entries();
  EXPECT_EQ(entries.kinds, 1u) << "the unfinished job's only";
  EXPECT_EQ(entries.gauges, 1u);
  EXPECT_EQ(entries.spec_checks, 1u);
  EXPECT_EQ(entries.admitted, 1u);
  EXPECT_EQ(Replicas(env, "Succeeded"), 3);
  EXPECT_EQ(Jobs(env, "Succeeded"), 1);
  EXPECT_EQ(Jobs(env, "Created"), 1);
  EXPECT_EQ(env.metrics.reconcile_total->Value({"error"}), 0);
}

// Without it (Kubernetes: kubectl may delete a job or change its status behind the controller's
// back), a finished job keeps its kind and gauge entries; what RefusalOf and admission keep is
// dropped in both modes.
TEST(ControllerTest, WithoutForgetFinishedJobsAFinishedJobKeepsItsIndexAndGauge) {
  CoreEnv env;
  env.forget_finished_jobs = false;
  env.StartController();
  ASSERT_TRUE(env.Create(PyTorchManifest("kept", 1)).ok());
  ASSERT_TRUE(
      CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "kept").size() == 2; }));
  env.backend.SetAllPods("default", "kept", PodPhase::kSucceeded, 0);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "kept", "Succeeded"); }));
  Churn(env, "kept");
  const Controller::PerJobEntries entries = env.controller->Entries();
  EXPECT_EQ(entries.kinds, 1u);
  EXPECT_EQ(entries.gauges, 1u);
  EXPECT_EQ(entries.spec_checks, 0u);
  EXPECT_EQ(entries.admitted, 0u);
  EXPECT_EQ(Replicas(env, "Succeeded"), 2);
}

// The totals stay exact for finished jobs without entries: after a restart (Start counts each
// stored finished job from its status before any pass), a Delete (JobService tells the
// controller the job as last stored) and a TTL deletion.
TEST(ControllerTest, FinishedJobsWithoutEntriesAreCountedAcrossRestartDeleteAndTtl) {
  CoreEnv env;
  env.StartController();
  ASSERT_TRUE(env.Create(PyTorchManifest("ok", 1)).ok());
  ASSERT_TRUE(env.Create(PyTorchManifest("bad", 1, "Never")).ok());
  ASSERT_TRUE(
      env.Create(PyTorchManifest("ttl", 1, "OnFailure", "    ttlSecondsAfterFinished: 60\n")).ok());
  for (const char* name : {"ok", "bad", "ttl"}) {
    ASSERT_TRUE(
        CoreEnv::WaitFor([&] { return env.backend.PodNames("default", name).size() == 2; }));
  }
  env.backend.SetAllPods("default", "ok", PodPhase::kSucceeded, 0);
  env.backend.SetAllPods("default", "bad", PodPhase::kFailed, 1);
  env.backend.SetAllPods("default", "ttl", PodPhase::kSucceeded, 0);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "ok", "Succeeded"); }));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "bad", "Failed"); }));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "ttl", "Succeeded"); }));
  for (const char* name : {"ok", "bad", "ttl"}) Churn(env, name);
  auto expect_totals = [&](double succeeded_pods, double failed_pods, double succeeded_jobs,
                           double failed_jobs) {
    EXPECT_TRUE(CoreEnv::WaitFor([&] {
      return Replicas(env, "Succeeded") == succeeded_pods &&
             Replicas(env, "Failed") == failed_pods && Jobs(env, "Succeeded") == succeeded_jobs &&
             Jobs(env, "Failed") == failed_jobs;
    })) << "replicas Succeeded "
        << Replicas(env, "Succeeded") << " Failed " << Replicas(env, "Failed")
        << ", jobs Succeeded " << Jobs(env, "Succeeded") << " Failed " << Jobs(env, "Failed");
    for (const char* other : {"Pending", "Running", "Unknown"}) {
      EXPECT_EQ(Replicas(env, other), 0) << other;
    }
    for (const char* other : {"Created", "Running", "Restarting", "Suspended"}) {
      EXPECT_EQ(Jobs(env, other), 0) << other;
    }
  };
  expect_totals(4, 2, 2, 1);
  EXPECT_EQ(env.controller->Entries().total(), 0u);

  // A restarted operator: counted from the store at Start, then by each job's start-up pass.
  env.StopController();
  env.metrics.replicas->Set({"Succeeded"}, -1);
  env.metrics.jobs->Set({"Succeeded"}, -1);
  env.StartController();
  expect_totals(4, 2, 2, 1);
  for (const char* name : {"ok", "bad", "ttl"}) Churn(env, name);
  expect_totals(4, 2, 2, 1);
  EXPECT_EQ(env.controller->Entries().total(), 0u);

  ASSERT_TRUE(env.service->Delete("default", "ok").ok());
  expect_totals(2, 2, 1, 1);
  env.clock.Advance(absl::Seconds(61));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return !env.store->Get({"default", "ttl"}).ok(); }));
  expect_totals(0, 2, 0, 1);
  ASSERT_TRUE(env.service->Delete("default", "bad").ok());
  expect_totals(0, 0, 0, 0);
  EXPECT_TRUE(CoreEnv::WaitFor([&] { return env.controller->Entries().total() == 0; }));
}

// A backend's name-only wake-up for a finished job, which the kind index does not hold, still
// reaches it (the store says its kind); replicas its status no longer counts give it an entry
// again, and the totals follow.
TEST(ControllerTest, AWakeUpByNameReachesAFinishedJobWithoutAnEntry) {
  CoreEnv env;
  env.StartController();
  ASSERT_TRUE(env.Create(PyTorchManifest("solo", 0)).ok());
  ASSERT_TRUE(
      CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "solo").size() == 1; }));
  env.backend.SetAllPods("default", "solo", PodPhase::kSucceeded, 0);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "solo", "Succeeded"); }));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.controller->Entries().total() == 0; }));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.controller->queue().Depth() == 0; }));
  EXPECT_EQ(Replicas(env, "Succeeded"), 1);

  // Through the backend's change callback, which knows the job's name only.
  env.backend.SetPodPhase("default", "solo", "solo-master-0", PodPhase::kFailed, 1);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return Replicas(env, "Failed") == 1; }));
  EXPECT_EQ(Replicas(env, "Succeeded"), 0);
  EXPECT_EQ(Jobs(env, "Succeeded"), 1);
  EXPECT_EQ(env.controller->Entries().gauges, 1u) << "its status counts a Succeeded replica";

  ASSERT_TRUE(env.service->Delete("default", "solo").ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return Replicas(env, "Failed") == 0; }));
  EXPECT_EQ(Jobs(env, "Succeeded"), 0);
  // Delete enqueues the job with its kind (indexed until its pass finds it gone).
  EXPECT_TRUE(CoreEnv::WaitFor([&] { return env.controller->Entries().total() == 0; }));
}

// A job whose workers still run when it succeeds (PyTorch: the Master's success is the job's)
// is counted right while they run, once its status folds them into succeeded, and when they
// then end otherwise: an entry while the status does not count its replicas, exact totals
// throughout.
TEST(ControllerTest, AFinishedJobWithRunningWorkersIsCountedAsItsReplicasEnd) {
  CoreEnv env;
  env.StartController();
  ASSERT_TRUE(env.Create(PyTorchManifest("tail", 2)).ok());
  ASSERT_TRUE(
      CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "tail").size() == 3; }));
  env.backend.SetAllPods("default", "tail", PodPhase::kRunning);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "tail", "Running"); }));
  env.backend.SetPodPhase("default", "tail", "tail-master-0", PodPhase::kSucceeded, 0);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "tail", "Succeeded"); }));
  Churn(env, "tail");
  EXPECT_EQ(Replicas(env, "Running"), 2);
  EXPECT_EQ(Replicas(env, "Succeeded"), 1);
  EXPECT_EQ(Jobs(env, "Succeeded"), 1);
  EXPECT_EQ(Jobs(env, "Running"), 0);
  env.backend.SetPodPhase("default", "tail", "tail-worker-0", PodPhase::kSucceeded, 0);
  env.backend.SetPodPhase("default", "tail", "tail-worker-1", PodPhase::kFailed, 137);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return Replicas(env, "Running") == 0; }));
  EXPECT_EQ(Replicas(env, "Succeeded"), 2);
  EXPECT_EQ(Replicas(env, "Failed"), 1);
  ASSERT_TRUE(env.service->Delete("default", "tail").ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return Replicas(env, "Succeeded") == 0; }));
  EXPECT_EQ(Replicas(env, "Failed"), 0);
  EXPECT_EQ(Jobs(env, "Succeeded"), 0);
  EXPECT_TRUE(CoreEnv::WaitFor([&] { return env.controller->Entries().total() == 0; }));
}

// A store with CrJobStore's kind rule over one SqliteJobStore per kind: a name is unique per
// kind only, a key's kind or a user's "<Kind>/<name>" reads that kind, a plain name taken by two
// kinds is FailedPrecondition.
class PerKindStore : public store::JobStore {
 public:
  explicit PerKindStore(Clock* clock) {
    for (api::v1::JobKind kind : {api::v1::PYTORCH_JOB, api::v1::TF_JOB}) {
      backend::local::SqliteJobStore::Options options;
      options.clock = clock;
      auto opened = backend::local::SqliteJobStore::Open(testing::MakeTempDir(), options);
      EXPECT_TRUE(opened.ok()) << opened.status();
      stores_[kind] = std::move(opened).value();
    }
  }

  absl::StatusOr<api::v1::TrainingJob> Create(const api::v1::TrainingJob& job) override {
    return Of(job.kind())->Create(job);
  }
  absl::StatusOr<api::v1::TrainingJob> Get(const JobKey& key) override {
    ASSIGN_OR_RETURN(auto routed, Route(key));
    return routed.first->Get(routed.second);
  }
  absl::StatusOr<store::ListResult> List(const store::ListOptions& o) override {
    store::ListResult all;
    for (auto& [kind, store] : stores_) {
      store::ListOptions one = o;
      one.page_size = 0;
      one.page_token.clear();
      ASSIGN_OR_RETURN(store::ListResult page, store->List(one));
      for (auto& job : page.jobs) all.jobs.push_back(std::move(job));
    }
    return all;
  }
  absl::StatusOr<api::v1::TrainingJob> Update(const api::v1::TrainingJob& job) override {
    return Of(job.kind())->Update(job);
  }
  absl::StatusOr<api::v1::TrainingJob> UpdateStatus(const api::v1::TrainingJob& job) override {
    return Of(job.kind())->UpdateStatus(job);
  }
  absl::Status Delete(const JobKey& key, std::optional<std::string> version) override {
    ASSIGN_OR_RETURN(auto routed, Route(key));
    return routed.first->Delete(routed.second, std::move(version));
  }
  absl::Status AppendEvent(const JobKey& key, const store::JobEvent& event) override {
    ASSIGN_OR_RETURN(auto routed, Route(key));
    return routed.first->AppendEvent(routed.second, event);
  }
  absl::StatusOr<std::vector<store::JobEvent>> ListEvents(const JobKey& key) override {
    ASSIGN_OR_RETURN(auto routed, Route(key));
    return routed.first->ListEvents(routed.second);
  }

  // Every key the controller read, as given.
  std::vector<std::string> reads() const {
    absl::MutexLock lock(&mu_);
    return reads_;
  }

 private:
  store::JobStore* Of(api::v1::JobKind kind) { return stores_.at(kind).get(); }

  absl::StatusOr<std::pair<store::JobStore*, JobKey>> Route(const JobKey& key) {
    {
      absl::MutexLock lock(&mu_);
      reads_.push_back(KeyString(key));
    }
    if (!key.kind.empty()) {
      const api::v1::KindInfo* info = api::v1::FindKindByName(key.kind);
      if (info == nullptr || stores_.count(info->kind) == 0) {
        return absl::InvalidArgumentError(absl::StrCat("no kind ", key.kind));
      }
      return std::make_pair(Of(info->kind), store::WithoutKind(key));
    }
    // What a user typed: "<Kind>/<name>".
    if (const size_t slash = key.name.find('/'); slash != std::string::npos) {
      const api::v1::KindInfo* info = api::v1::FindKindByName(key.name.substr(0, slash));
      if (info == nullptr || stores_.count(info->kind) == 0) {
        return absl::InvalidArgumentError(absl::StrCat("no kind in ", key.name));
      }
      return std::make_pair(Of(info->kind), JobKey{key.namespace_, key.name.substr(slash + 1)});
    }
    std::vector<store::JobStore*> found;
    for (auto& [kind, store] : stores_) {
      if (store->Get(key).ok()) found.push_back(store.get());
    }
    if (found.empty()) return absl::NotFoundError(absl::StrCat(KeyString(key), " not found"));
    if (found.size() > 1) {
      return absl::FailedPreconditionError(absl::StrCat(KeyString(key), " exists in two kinds"));
    }
    return std::make_pair(found.front(), key);
  }

  std::map<api::v1::JobKind, std::unique_ptr<backend::local::SqliteJobStore>> stores_;
  mutable absl::Mutex mu_;
  std::vector<std::string> reads_ ABSL_GUARDED_BY(mu_);
};

std::string TfManifest(const std::string& name) {
  return absl::StrCat("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: ", name,
                      "\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 1\n"
                      "      restartPolicy: OnFailure\n      template:\n        spec:\n"
                      "          containers:\n          - name: tensorflow\n"
                      "            image: busybox\n            command: [\"true\"]\n");
}

// On Kubernetes a PyTorchJob and a TFJob may share a name. Job keys carry the kind, so each is
// a job of its own: created, reconciled, written, counted and deleted apart, never through the
// ambiguous plain name.
TEST(ControllerTest, KeysWithKindsReconcileTwoKindsOfOneName) {
  ::coach::FakeClock clock;
  testing::FakeBackend backend;
  PerKindStore store(&clock);
  metrics::Registry registry;
  metrics::OperatorMetrics metrics(&registry);
  WatchBroadcaster watchers(16);
  KeyedMutex job_locks;
  JobService service(&store, &backend, &watchers, &job_locks, &metrics);
  Controller::Options options;
  options.workers = 2;
  options.queue.poll_interval = absl::Milliseconds(5);
  options.queue.backoff_base = absl::Milliseconds(5);
  options.queue.backoff_cap = absl::Milliseconds(50);
  Controller controller(&store, &backend, &service, &watchers, &job_locks, &clock, &metrics,
                        options);
  ASSERT_TRUE(controller.Start().ok());

  // Disjoint replica types: the fake backend, like the kube one, knows pods by job name.
  CreateRequest pt;
  pt.manifest = PyTorchManifest("same", 0);
  ASSERT_TRUE(service.Create(pt).ok());
  CreateRequest tf;
  tf.manifest = TfManifest("same");
  ASSERT_TRUE(service.Create(tf).ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return backend.PodNames("default", "same").size() == 2; }));
  EXPECT_EQ(backend.PodNames("default", "same"),
            (std::vector<std::string>{"same-master-0", "same-worker-0"}));

  auto has = [&](const std::string& qualified, const std::string& type) {
    auto job = store.Get({"default", qualified});
    return job.ok() && reconcile::HasTrueCondition(job->status(), type);
  };
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return has("PyTorchJob/same", "Created"); }));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return has("TFJob/same", "Created"); }));
  // A pod change reaches the backend's callback with the job label only: both kinds wake.
  backend.SetAllPods("default", "same", PodPhase::kRunning);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return has("PyTorchJob/same", "Running"); }));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return has("TFJob/same", "Running"); }));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return metrics.jobs->Value({"Running"}) == 2; }));
  EXPECT_EQ(backend.CreateCount("default", "same"), 2);

  // Each kind's events on its own job.
  auto pt_events = store.ListEvents({"default", "PyTorchJob/same"});
  ASSERT_TRUE(pt_events.ok()) << pt_events.status();
  auto tf_events = store.ListEvents({"default", "TFJob/same"});
  ASSERT_TRUE(tf_events.ok()) << tf_events.status();
  auto mentions = [](const std::vector<store::JobEvent>& events, const std::string& s) {
    for (const auto& e : events) {
      if (absl::StrContains(e.message, s)) return true;
    }
    return false;
  };
  EXPECT_TRUE(mentions(*pt_events, "same-master-0"));
  EXPECT_FALSE(mentions(*pt_events, "same-worker-0"));
  EXPECT_TRUE(mentions(*tf_events, "same-worker-0"));
  EXPECT_FALSE(mentions(*tf_events, "same-master-0"));
  // The controller and the service never used the ambiguous name (it names neither job).
  for (const std::string& read : store.reads()) {
    EXPECT_TRUE(read == "default/PyTorchJob/same" || read == "default/TFJob/same") << read;
  }

  // Deleting one (by its qualified name, as `coach delete pytorchjobs/same` would) leaves the
  // other reconciled.
  ASSERT_TRUE(service.Delete("default", "PyTorchJob/same").ok());
  EXPECT_EQ(store.Get({"default", "PyTorchJob/same"}).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return metrics.jobs->Value({"Running"}) == 1; }));
  EXPECT_TRUE(store.Get({"default", "same"}).ok()) << "the TFJob is the name's only job now";
  controller.Stop();
}

}  // namespace
}  // namespace coach::core
