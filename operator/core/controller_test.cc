// Controller + JobService with the real SqliteJobStore, a FakeBackend and a FakeClock.

#include "operator/core/controller.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "operator/core/testing/core_fixture.h"

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
  ASSERT_TRUE(CoreEnv::WaitFor(
      [&] { return env.metrics.jobs_restarted->Value({"default", "pytorch"}) == 1; }));
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
  ASSERT_TRUE(env.Create(PyTorchManifest("dl", 1, "OnFailure", "    activeDeadlineSeconds: 30\n")).ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "dl").size() == 2; }));
  env.backend.SetAllPods("default", "dl", PodPhase::kRunning);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "dl", "Running"); }));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.controller->queue().DelayedCount() >= 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(env.HasCondition("default", "dl", "Failed"));
  // No pod event from here on: only the timer can notice.
  env.clock.Advance(absl::Seconds(31));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "dl", "Failed"); }));
  ASSERT_TRUE(CoreEnv::WaitFor(
      [&] { return env.metrics.jobs_failed->Value({"default", "pytorch"}) == 1; }));
}

TEST(ControllerTest, TtlDeletesTheFinishedJob) {
  CoreEnv env;
  env.StartController();
  ASSERT_TRUE(env.Create(PyTorchManifest("ttl", 1, "OnFailure", "    ttlSecondsAfterFinished: 60\n")).ok());
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "ttl").size() == 2; }));
  env.backend.SetAllPods("default", "ttl", PodPhase::kSucceeded, 0);
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "ttl", "Succeeded"); }));
  auto sub = env.service->Watch("default", "ttl", "");
  ASSERT_TRUE(sub.ok());
  env.clock.Advance(absl::Seconds(61));
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return !env.store->Get({"default", "ttl"}).ok(); }));
  ASSERT_TRUE(CoreEnv::WaitFor(
      [&] { return env.metrics.jobs_ttl_deleted->Value({"default", "pytorch"}) == 1; }));
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
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "resume").size() == 2; }));
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
  ASSERT_TRUE(CoreEnv::WaitFor(
      [&] { return env.metrics.reconcile_total->Value({"error"}) >= 1; }));
  EXPECT_TRUE(env.backend.PodNames("default", "retry").empty());
  env.backend.SetObserveError(absl::OkStatus());
  // The backoff timer runs on the fake clock.
  for (int i = 0; i < 20 && env.backend.PodNames("default", "retry").empty(); ++i) {
    env.clock.Advance(absl::Seconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "retry").size() == 2; }));
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

}  // namespace
}  // namespace coach::core
