// LocalBackend with the real sqlite store, the real shim runner and real processes.
#include "operator/backend/local/local_backend.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "api/v1/coach_status.h"
#include "common/testing/test_dir.h"
#include "operator/backend/local/fs_util.h"
#include "operator/backend/local/store/sqlite_job_store.h"
#include "operator/backend/local/testing/fake_gpu_discovery.h"
#include "operator/model/pod_identity.h"
#include "operator/model/testing/job_builder.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/desired_objects.h"

namespace coach::backend::local {
namespace {

using model::Json;
using model::PodPhase;

std::string ShimPath() {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir ? srcdir : ".", "/", ws ? ws : "coach",
                      "/operator/backend/local/coach-replica-shim");
}

Json Argv(const std::string& script) { return Json::array({"/bin/sh", "-c", script}); }

class LocalBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::coach::testing::FreshTestDir(
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    auto store = SqliteJobStore::Open(dir_ + "/state");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    backend_ = NewBackend();
    ASSERT_NE(backend_, nullptr);
  }
  void TearDown() override {
    if (backend_ == nullptr) return;
    for (const model::Job& j : jobs_) EXPECT_TRUE(backend_->Forget(j).ok());
  }

  std::unique_ptr<LocalBackend> NewBackend(absl::Duration poll_interval = absl::Milliseconds(20),
                                           absl::Duration grace = absl::Seconds(2)) {
    LocalBackendOptions o;
    o.state_dir = dir_ + "/state";
    o.store = store_->replicas();
    o.jobs = store_.get();
    o.shim_path = ShimPath();
    o.poll_interval = poll_interval;
    o.grace_period = grace;
    o.gpus = &gpus_;
    o.node_name = "testnode";
    o.base_env = {{"PATH", "/usr/bin:/bin"},
                  {"HOME", "/nonexistent"},
                  {"LANG", "C.UTF-8"},
                  {"NOT_COPIED", "x"}};
    auto b = LocalBackend::Create(o);
    EXPECT_TRUE(b.ok()) << b.status();
    return b.ok() ? std::move(*b) : nullptr;
  }

  // A one-worker PyTorchJob whose container is `container` (the "pytorch" one).
  model::Job MakeJob(const std::string& name, Json container) {
    container["name"] = "pytorch";
    container["image"] = "ignored:latest";
    Json tmpl = {{"spec", {{"containers", Json::array({container})}}}};
    auto stored = store_->Create(reconcile::testing::MakePyTorchJob("ns", name)
                                     .Workers(1)
                                     .Template("Worker", tmpl.dump())
                                     .Build());
    EXPECT_TRUE(stored.ok()) << stored.status();
    EXPECT_TRUE(backend_->Admit(*stored).ok());
    jobs_.push_back(*stored);
    return *stored;
  }

  model::KubeObject Pod(const model::Job& job, const std::string& type = "Worker", int i = 0) {
    model::ReconcileConfig config;
    config.address_plan = backend_->AddressPlanFor(job);
    auto pod = reconcile::DesiredPod(job, type, i, config);
    EXPECT_TRUE(pod.ok()) << pod.status();
    return *pod;
  }

  absl::Status Create(const model::Job& job, const model::KubeObject& o) {
    return backend_->Apply(job, model::Action{model::Action::Type::kCreate, o});
  }
  absl::Status Delete(const model::Job& job, const std::string& kind, const std::string& name) {
    model::KubeObject o;
    o.kind = kind;
    o.name = name;
    return backend_->Apply(job, model::Action{model::Action::Type::kDelete, o});
  }

  model::ObservedPod WaitPod(const model::Job& job, PodPhase phase,
                             absl::Duration timeout = absl::Seconds(20)) {
    const absl::Time deadline = absl::Now() + timeout;
    model::ObservedPod last;
    while (absl::Now() < deadline) {
      auto seen = backend_->Observe(job);
      EXPECT_TRUE(seen.ok()) << seen.status();
      if (seen.ok() && !seen->pods.empty()) {
        last = seen->pods[0];
        if (last.phase == phase) return last;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    ADD_FAILURE() << "pod never reached " << model::PodPhaseName(phase) << "; last "
                  << model::PodPhaseName(last.phase);
    return last;
  }

  std::string Logs(const model::Job& job, LogOptions options = {}) {
    std::string out;
    std::atomic<bool> cancelled{false};
    absl::Status s = backend_->StreamLogs(
        job, options,
        [&](const std::string&, const std::string& d) {
          out += d;
          return true;
        },
        cancelled);
    EXPECT_TRUE(s.ok()) << s;
    return out;
  }

  void Touch(const std::string& path) { std::ofstream(path) << "x"; }

  // Observes the job until its one pod satisfies `done`.
  model::ObservedPod WaitPodUntil(const model::Job& job,
                                  const std::function<bool(const model::ObservedPod&)>& done,
                                  const std::string& what) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    model::ObservedPod last;
    while (absl::Now() < deadline) {
      auto seen = backend_->Observe(job);
      EXPECT_TRUE(seen.ok()) << seen.status();
      if (seen.ok() && !seen->pods.empty()) {
        last = seen->pods[0];
        if (done(last)) return last;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    ADD_FAILURE() << "pod never " << what;
    return last;
  }

  // Waits until `path` holds a number followed by a newline (written by a replica).
  pid_t ReadPidFile(const std::string& path) {
    for (int i = 0; i < 1000; ++i) {
      auto text = ReadFile(path);
      pid_t pid = 0;
      if (text.ok() && absl::EndsWith(*text, "\n") &&
          absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &pid)) {
        return pid;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    ADD_FAILURE() << "no pid in " << path;
    return 0;
  }

  std::string dir_;
  std::unique_ptr<SqliteJobStore> store_;
  testing::FakeGpuDiscovery gpus_{2};
  std::unique_ptr<LocalBackend> backend_;
  std::vector<model::Job> jobs_;
};

TEST_F(LocalBackendTest, ExitCodeAndLog) {
  model::Job job = MakeJob("exit3", {{"command", Argv("echo hi; exit 3")}});
  model::KubeObject pod = Pod(job);
  ASSERT_TRUE(Create(job, pod).ok());
  ASSERT_TRUE(Create(job, pod).ok()) << "creating an existing pod is OK";
  model::ObservedPod p = WaitPod(job, PodPhase::kFailed);
  EXPECT_EQ(p.name, "exit3-worker-0");
  EXPECT_EQ(p.replica_type, "Worker");
  EXPECT_EQ(p.index, 0);
  EXPECT_EQ(p.exit_code, 3);
  EXPECT_EQ(Logs(job), "hi\n");
  // The exit is persisted: a new backend sees it without the process.
  backend_ = NewBackend();
  auto seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok());
  ASSERT_EQ(seen->pods.size(), 1u);
  EXPECT_EQ(seen->pods[0].phase, PodPhase::kFailed);
  EXPECT_EQ(seen->pods[0].exit_code, 3);
}

TEST_F(LocalBackendTest, SuccessAndSignal) {
  model::Job ok = MakeJob("ok", {{"command", Argv("exit 0")}});
  ASSERT_TRUE(Create(ok, Pod(ok)).ok());
  EXPECT_EQ(WaitPod(ok, PodPhase::kSucceeded).exit_code, 0);
  // "$$" is Kubernetes' escape for a literal "$".
  model::Job sig = MakeJob("sig", {{"command", Argv("kill -9 $$$$")}});
  ASSERT_TRUE(Create(sig, Pod(sig)).ok());
  EXPECT_EQ(WaitPod(sig, PodPhase::kFailed).exit_code, 128 + 9);
}

// The poller learns of an end from the shim's end-of-file descriptor, not at its next
// poll: with an hour between polls the job is still woken, and sees the exit, at once.
TEST_F(LocalBackendTest, AnEndWakesTheJobWithoutWaitingForAPoll) {
  backend_ = NewBackend(absl::Hours(1));
  absl::Mutex mu;
  int calls = 0;
  backend_->SetChangeCallback([&](const std::string&, const std::string&) {
    absl::MutexLock lock(&mu);
    ++calls;
  });
  ASSERT_TRUE(backend_->Start().ok());
  model::Job job = MakeJob("woken", {{"command", Argv("exit 4")}});
  ASSERT_TRUE(Create(job, Pod(job)).ok());
  {
    // One call when the start ended, one when the replica did.
    absl::MutexLock lock(&mu);
    auto two = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu) { return calls >= 2; };
    EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(&two), absl::Seconds(10)))
        << "calls: " << calls;
  }
  auto seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok());
  ASSERT_EQ(seen->pods.size(), 1u);
  EXPECT_EQ(seen->pods[0].phase, PodPhase::kFailed);
  EXPECT_EQ(seen->pods[0].exit_code, 4);
  backend_->Stop();
}

// A pass's pods are recorded together and then started; the results say what happened to
// each action, and the first failure is returned, named.
TEST_F(LocalBackendTest, ApplyAllStartsThePodsBeforeAFailureAndReportsEachAction) {
  model::Job job = MakeJob("batch", {{"command", Argv("exit 0")}});
  model::KubeObject good = Pod(job);
  model::KubeObject service;
  service.kind = "Service";
  service.name = "batch-worker-0";
  model::KubeObject bad = good;
  bad.name = "batch/../escape";
  model::KubeObject after = service;
  after.name = "batch-after";
  using Type = model::Action::Type;
  const std::vector<model::Action> actions = {{Type::kCreate, good},
                                              {Type::kCreate, service},
                                              {Type::kCreate, bad},
                                              {Type::kCreate, after}};
  std::vector<absl::Status> results;
  absl::Status applied = backend_->ApplyAll(job, actions, &results);
  EXPECT_EQ(applied.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(applied.message().find("create Pod batch/../escape"), std::string::npos) << applied;
  ASSERT_EQ(results.size(), 4u);
  EXPECT_TRUE(results[0].ok()) << results[0];
  EXPECT_TRUE(results[1].ok()) << results[1];
  EXPECT_EQ(results[2].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(results[3].code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(WaitPod(job, PodPhase::kSucceeded).name, "batch-worker-0");
  auto seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok());
  ASSERT_EQ(seen->objects.size(), 1u);
  EXPECT_EQ(seen->objects[0].name, "batch-worker-0");
  // Again, without the bad pod: everything exists, nothing is started twice.
  results.clear();
  EXPECT_TRUE(backend_->ApplyAll(job, {actions[0], actions[1], actions[3]}, &results).ok());
  seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(seen->pods.size(), 1u);
  EXPECT_EQ(seen->objects.size(), 2u);
}

TEST_F(LocalBackendTest, ApplyAllStartsAPodNamedTwiceInOnePassOnce) {
  model::Job job = MakeJob("twice", {{"command", Argv("echo once")}});
  model::KubeObject pod = Pod(job);
  using Type = model::Action::Type;
  std::vector<absl::Status> results;
  ASSERT_TRUE(backend_->ApplyAll(job, {{Type::kCreate, pod}, {Type::kCreate, pod}}, &results).ok());
  EXPECT_TRUE(results[0].ok() && results[1].ok());
  WaitPod(job, PodPhase::kSucceeded);
  auto seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(seen->pods.size(), 1u);
  EXPECT_EQ(Logs(job), "once\n");
}

TEST_F(LocalBackendTest, RecreatedFailedPodCarriesItsRestartCount) {
  model::Job job = MakeJob("again", {{"command", Argv("exit 1")}});
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(Create(job, Pod(job)).ok());
    EXPECT_EQ(WaitPod(job, PodPhase::kFailed).restart_count, round);
    ASSERT_TRUE(Delete(job, "Pod", "again-worker-0").ok());
  }
}

TEST_F(LocalBackendTest, RecordWrittenBeforeACrashIsResolvedAtStart) {
  model::Job job = MakeJob("crash", {{"command", Argv("exit 0")}});
  ReplicaRecord never;
  never.job = KeyOf(job);
  never.name = "crash-worker-0";
  never.replica_type = "Worker";
  ASSERT_TRUE(store_->replicas()->PutReplica(never).ok());  // pid 0: the operator died before Start
  ASSERT_TRUE(backend_->Start().ok());
  auto seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok());
  EXPECT_TRUE(seen->pods.empty()) << "never started: dropped, so the reconciler recreates it";
  backend_->Stop();
}

// The replica dir outlives an attempt. A crash after the next attempt's record (pid 0) is
// written and before its process starts must not adopt the ended attempt through its
// process file: that counted its exit twice and failed an OnFailure job for backoffLimit
// with every replica restarted once (e2e/local:chaos_kill_test, seed 21, 20 kills).
TEST_F(LocalBackendTest, CrashBeforeARestartedPodStartsDoesNotAdoptTheEndedAttempt) {
  model::Job job = MakeJob("redo", {{"command", Argv("exit 1")}});
  ASSERT_TRUE(Create(job, Pod(job)).ok());
  EXPECT_EQ(WaitPod(job, PodPhase::kFailed).exit_code, 1);
  ASSERT_TRUE(Delete(job, "Pod", "redo-worker-0").ok());
  // What CreatePod stores before the process starts, then the operator dies.
  ReplicaRecord pending;
  pending.job = KeyOf(job);
  pending.name = "redo-worker-0";
  pending.replica_type = "Worker";
  pending.restart_count = 1;
  ASSERT_TRUE(store_->replicas()->PutReplica(pending).ok());
  backend_ = NewBackend();
  ASSERT_TRUE(backend_->Start().ok());
  auto seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok());
  EXPECT_TRUE(seen->pods.empty()) << "never started: dropped, so the reconciler recreates it; "
                                     "got "
                                  << model::PodPhaseName(seen->pods[0].phase) << " exit "
                                  << seen->pods[0].exit_code.value_or(-1);
  backend_->Stop();
}

TEST_F(LocalBackendTest, EnvironmentIsExactlyThePods) {
  model::Job job = MakeJob("env", {{"command", Json::array({"env"})}, {"env", Json::parse(R"J([
                 {"name":"A","value":"1"},
                 {"name":"B","value":"$(A)-$(NOPE)-$$(A)"},
                 {"name":"POD","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},
                 {"name":"NS","valueFrom":{"fieldRef":{"fieldPath":"metadata.namespace"}}},
                 {"name":"IP","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}},
                 {"name":"NODE","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}}])J")}});
  model::KubeObject pod = Pod(job);
  ASSERT_TRUE(Create(job, pod).ok());
  WaitPod(job, PodPhase::kSucceeded);
  std::vector<std::string> want;
  for (const Json& e : pod.body["spec"]["containers"][0]["env"]) {
    const std::string name = e["name"];
    if (name == "B")
      want.push_back("B=1-$(NOPE)-$(A)");
    else if (name == "POD")
      want.push_back("POD=env-worker-0");
    else if (name == "NS")
      want.push_back("NS=ns");
    else if (name == "IP")
      want.push_back("IP=127.0.0.1");
    else if (name == "NODE")
      want.push_back("NODE=testnode");
    else
      want.push_back(absl::StrCat(name, "=", e["value"].get<std::string>()));
  }
  want.push_back(
      absl::StrCat("COACH_HEARTBEAT_FILE=", dir_, "/state/replicas/ns/env/env-worker-0.heartbeat"));
  want.push_back("HOSTNAME=env-worker-0");
  want.push_back("PATH=/usr/bin:/bin");
  want.push_back("HOME=/nonexistent");
  want.push_back("LANG=C.UTF-8");
  std::vector<std::string> got = absl::StrSplit(Logs(job), '\n', absl::SkipEmpty());
  EXPECT_EQ(std::multiset<std::string>(got.begin(), got.end()),
            std::multiset<std::string>(want.begin(), want.end()));
  EXPECT_GE(want.size(), 10u) << "the reconciler's wiring is there too";
}

TEST_F(LocalBackendTest, ArgvExpansionIsNotAShell) {
  model::Job job = MakeJob("argv", {{"command", Json::array({"/bin/echo", "$(X)", "$(HOME)"})},
                                    {"args", Json::array({"'; rm -rf /'", "$$(X)"})},
                                    {"env", Json::parse(R"J([{"name":"X","value":"a b"}])J")}});
  ASSERT_TRUE(Create(job, Pod(job)).ok());
  WaitPod(job, PodPhase::kSucceeded);
  EXPECT_EQ(Logs(job), "a b /nonexistent '; rm -rf /' $(X)\n");
}

TEST_F(LocalBackendTest, MissingCommandIsInvalid) {
  model::Job job = MakeJob("nocmd", {{"args", Json::array({"x"})}});
  absl::Status s = Create(job, Pod(job));
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("this pod has none"), std::string::npos) << s;
  auto seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok());
  EXPECT_TRUE(seen->pods.empty());
}

TEST_F(LocalBackendTest, DeleteStopsTheWholeGroup) {
  const std::string pidfile = dir_ + "/child.pid";
  model::Job job = MakeJob(
      "del", {{"command", Argv(absl::StrCat("sleep 300 & echo $! > ", pidfile, "; wait"))}});
  ASSERT_TRUE(Create(job, Pod(job)).ok());
  pid_t child = 0;
  for (int i = 0; i < 1000 && child == 0; ++i) {
    auto text = ReadFile(pidfile);
    if (text.ok() && absl::EndsWith(*text, "\n")) {
      ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &child));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_GT(child, 0);
  EXPECT_EQ(kill(child, 0), 0);
  ASSERT_TRUE(Delete(job, "Pod", "del-worker-0").ok());
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = kill(child, 0) != 0 && errno == ESRCH;
    if (!gone) absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(gone) << "the background child of the deleted pod is still alive";
  auto seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok());
  EXPECT_TRUE(seen->pods.empty());
  EXPECT_TRUE(Delete(job, "Pod", "del-worker-0").ok()) << "deleting twice is OK";
}

// A replica's coach-metric lines and its heartbeat are its progress, and only its own: the
// next pod of the same name starts without them.
TEST_F(LocalBackendTest, ProgressFromMetricLinesAndTheHeartbeat) {
  const std::string go = dir_ + "/go";
  model::Job job = MakeJob(
      "prog", {{"command", Argv(absl::StrCat("echo 'coach-metric name=loss value=0.5 step=3'; ",
                                             "while [ ! -e ", go, " ]; do sleep 0.02; done; ",
                                             "touch \"$COACH_HEARTBEAT_FILE\"; sleep 30"))}});
  ASSERT_TRUE(Create(job, Pod(job)).ok());
  model::ObservedPod p = WaitPodUntil(
      job, [](const model::ObservedPod& p) { return p.progress.has_value(); }, "reported");
  ASSERT_TRUE(p.progress.has_value());
  EXPECT_EQ(p.phase, PodPhase::kRunning);
  EXPECT_EQ(p.progress->step, 3);
  EXPECT_EQ(p.progress->metrics, (std::map<std::string, double>{{"loss", 0.5}}));
  const absl::Time reported = p.progress->time;
  EXPECT_GT(reported, absl::Now() - absl::Minutes(1));
  EXPECT_FALSE(p.stopped);

  absl::SleepFor(absl::Milliseconds(50));  // so that the heartbeat's mtime is later
  Touch(go);
  p = WaitPodUntil(
      job,
      [&](const model::ObservedPod& p) {
        return p.progress.has_value() && p.progress->time > reported;
      },
      "beat");
  EXPECT_EQ(p.progress->step, 3) << "a heartbeat moves the time only";
  EXPECT_EQ(p.progress->metrics.count("loss"), 1u);

  // The next pod of the name reports nothing: it has no progress, its predecessor's is gone.
  ASSERT_TRUE(Delete(job, "Pod", "prog-worker-0").ok());
  model::KubeObject quiet = Pod(job);
  quiet.body["spec"]["containers"][0]["command"] = Argv("echo started; sleep 30");
  ASSERT_TRUE(Create(job, quiet).ok());
  for (int i = 0; i < 500 && Logs(job).empty(); ++i) absl::SleepFor(absl::Milliseconds(10));
  p = WaitPod(job, PodPhase::kRunning);
  EXPECT_FALSE(p.progress.has_value()) << "the deleted pod's progress is not the new one's";
}

// A process of a running replica stopped by a signal is observed as such; deleting the pod
// continues it after the SIGTERM, so it ends well within the grace.
TEST_F(LocalBackendTest, AStoppedReplicaIsObservedAndDeletedWithinTheGrace) {
  backend_ = NewBackend(absl::Milliseconds(20), /*grace=*/absl::Seconds(30));
  const std::string pidfile = dir_ + "/pid";
  model::Job job = MakeJob(
      "stopped", {{"command", Argv(absl::StrCat("echo $$$$ > ", pidfile, "; sleep 300 & wait"))}});
  ASSERT_TRUE(Create(job, Pod(job)).ok());
  const pid_t leader = ReadPidFile(pidfile);
  ASSERT_GT(leader, 0);
  EXPECT_FALSE(WaitPod(job, PodPhase::kRunning).stopped);
  ASSERT_EQ(kill(-leader, SIGSTOP), 0);
  EXPECT_TRUE(WaitPodUntil(
                  job, [](const model::ObservedPod& p) { return p.stopped; }, "stopped")
                  .stopped);
  const absl::Time start = absl::Now();
  ASSERT_TRUE(Delete(job, "Pod", "stopped-worker-0").ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(10)) << "the grace is 30 s";
  EXPECT_TRUE(kill(leader, 0) != 0 && errno == ESRCH);
  auto seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok());
  EXPECT_TRUE(seen->pods.empty());
}

// The attempt is the pod's coach.dev/attempt label, kept with the replica's record.
TEST_F(LocalBackendTest, TheAttemptIsThePodsLabel) {
  model::Job job = MakeJob("attempt", {{"command", Argv("exit 0")}});
  model::KubeObject pod = Pod(job);
  pod.body["metadata"]["labels"][model::kLabelAttempt] = "2";
  ASSERT_TRUE(Create(job, pod).ok());
  EXPECT_EQ(WaitPod(job, PodPhase::kSucceeded).attempt, 2);
  backend_ = NewBackend();
  auto seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok());
  ASSERT_EQ(seen->pods.size(), 1u);
  EXPECT_EQ(seen->pods[0].attempt, 2) << "after an operator restart too";
  for (const char* label : {"", "two", "-1"}) {
    ASSERT_TRUE(Delete(job, "Pod", pod.name).ok());
    pod.body["metadata"]["labels"][model::kLabelAttempt] = label;
    ASSERT_TRUE(Create(job, pod).ok());
    EXPECT_EQ(WaitPod(job, PodPhase::kSucceeded).attempt, 0) << "label \"" << label << "\"";
  }
}

TEST_F(LocalBackendTest, ReadoptedAfterOperatorRestartAndCallbackFires) {
  const std::string go = dir_ + "/go";
  model::Job job = MakeJob(
      "readopt", {{"command", Argv(absl::StrCat("while [ ! -e ", go,
                                                " ]; do sleep 0.02; done; echo bye; exit 7"))}});
  ASSERT_TRUE(backend_->Start().ok());
  ASSERT_TRUE(Create(job, Pod(job)).ok());
  WaitPod(job, PodPhase::kRunning);
  backend_.reset();  // the operator goes away; the replica does not

  backend_ = NewBackend();
  absl::Mutex mu;
  std::vector<std::string> calls;
  backend_->SetChangeCallback([&](const std::string& ns, const std::string& name) {
    absl::MutexLock lock(&mu);
    calls.push_back(ns + "/" + name);
  });
  ASSERT_TRUE(backend_->Start().ok());
  auto seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok());
  ASSERT_EQ(seen->pods.size(), 1u);
  EXPECT_EQ(seen->pods[0].phase, PodPhase::kRunning);
  Touch(go);
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(
        mu.AwaitWithTimeout(absl::Condition(
                                +[](std::vector<std::string>* c) { return !c->empty(); }, &calls),
                            absl::Seconds(20)));
    EXPECT_EQ(calls, std::vector<std::string>{"ns/readopt"});
  }
  model::ObservedPod p = WaitPod(job, PodPhase::kFailed);
  EXPECT_EQ(p.exit_code, 7);
  EXPECT_EQ(Logs(job), "bye\n");
  backend_->Stop();
}

// A job whose one worker prints "a<run>-1", "a<run>-2" (run: how many times it ran before) and
// fails; RunAttempt runs its pod for an attempt and waits for the end.
class AttemptLogsTest : public LocalBackendTest {
 protected:
  model::Job MakeCountingJob(const std::string& name) {
    const std::string counter = absl::StrCat(dir_, "/", name, ".runs");
    return MakeJob(name, {{"command", Argv(absl::StrCat("n=$(cat ", counter,
                                                        " 2>/dev/null || echo 0); echo a$n-1; "
                                                        "echo a$n-2; echo $((n+1)) > ",
                                                        counter, "; exit 1"))}});
  }
  // Deletes the pod of the previous attempt first unless `first`.
  void RunAttempt(const model::Job& job, int attempt, bool first = false) {
    const std::string pod_name = job.metadata().name() + "-worker-0";
    if (!first) {
      ASSERT_TRUE(Delete(job, "Pod", pod_name).ok());
    }
    model::KubeObject pod = Pod(job);
    pod.body["metadata"]["labels"][model::kLabelAttempt] = std::to_string(attempt);
    ASSERT_TRUE(Create(job, pod).ok());
    EXPECT_EQ(WaitPod(job, PodPhase::kFailed).attempt, attempt);
  }
  static LogOptions OfAttempt(int attempt, int64_t tail_lines = 0) {
    LogOptions o;
    o.attempt = attempt;
    o.tail_lines = tail_lines;
    return o;
  }
  absl::Status LogsStatus(const model::Job& job, const LogOptions& options) {
    std::atomic<bool> cancelled{false};
    return backend_->StreamLogs(
        job, options, [](const std::string&, const std::string&) { return true; }, cancelled);
  }
};

TEST_F(AttemptLogsTest, EachAttemptKeepsItsOwnLog) {
  model::Job job = MakeCountingJob("again");
  RunAttempt(job, 0, /*first=*/true);
  RunAttempt(job, 1);
  RunAttempt(job, 2);
  EXPECT_EQ(Logs(job), "a2-1\na2-2\n") << "the current attempt's log starts empty";
  EXPECT_EQ(Logs(job, OfAttempt(2)), "a2-1\na2-2\n");
  EXPECT_EQ(Logs(job, OfAttempt(1)), "a1-1\na1-2\n");
  EXPECT_EQ(Logs(job, OfAttempt(0)), "a0-1\na0-2\n");
  EXPECT_EQ(Logs(job, OfAttempt(0, /*tail_lines=*/1)), "a0-2\n");
  LogOptions follow = OfAttempt(1);
  follow.follow = true;
  follow.replica = "worker-0";
  EXPECT_EQ(Logs(job, follow), "a1-1\na1-2\n") << "an ended attempt is not followed";
  EXPECT_EQ(ReadFile(dir_ + "/state/replicas/ns/again/attempts/1/again-worker-0.log").value_or(""),
            "a1-1\na1-2\n");

  LogOptions other = OfAttempt(1);
  other.replica = "master-0";
  absl::Status s = LogsStatus(job, other);
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  s = LogsStatus(job, OfAttempt(3));
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "attempt 3")) << s;
  EXPECT_EQ(LogsStatus(job, OfAttempt(-1)).code(), absl::StatusCode::kInvalidArgument);

  // After an operator restart, from the files alone.
  backend_ = NewBackend();
  EXPECT_EQ(Logs(job, OfAttempt(0)), "a0-1\na0-2\n");
  EXPECT_EQ(Logs(job, OfAttempt(1)), "a1-1\na1-2\n");
  EXPECT_EQ(Logs(job, OfAttempt(2)), "a2-1\na2-2\n");

  // The last attempt's pods are gone (the job ended): its log is still read by its attempt.
  ASSERT_TRUE(Delete(job, "Pod", "again-worker-0").ok());
  EXPECT_TRUE(absl::IsNotFound(LogsStatus(job, LogOptions())));
  EXPECT_EQ(Logs(job, OfAttempt(2)), "a2-1\na2-2\n");
  EXPECT_EQ(Logs(job, OfAttempt(1)), "a1-1\na1-2\n");
  EXPECT_TRUE(absl::IsNotFound(LogsStatus(job, OfAttempt(3))));

  ASSERT_TRUE(backend_->Forget(job).ok());
  struct stat st;
  EXPECT_NE(stat((dir_ + "/state/replicas/ns/again/attempts").c_str(), &st), 0);
  EXPECT_TRUE(absl::IsNotFound(LogsStatus(job, OfAttempt(0))));
}

// A pod recreated within its attempt (a replica's own restart) goes on with the same log.
TEST_F(AttemptLogsTest, ARestartWithinTheAttemptAppends) {
  model::Job job = MakeCountingJob("inplace");
  RunAttempt(job, 0, /*first=*/true);
  RunAttempt(job, 0);
  EXPECT_EQ(Logs(job), "a0-1\na0-2\na1-1\na1-2\n");
  EXPECT_TRUE(absl::IsNotFound(LogsStatus(job, OfAttempt(1))));
}

TEST_F(AttemptLogsTest, TrimmingKeepsAttemptZeroAndTheLatest) {
  model::Job job = MakeCountingJob("many");
  const int last = api::v1::kMaxAttempts + 1;
  RunAttempt(job, 0, /*first=*/true);
  for (int a = 1; a <= last; ++a) RunAttempt(job, a);
  // With the current attempt, those status.coach.attempts lists: 0 and the latest 19.
  EXPECT_EQ(Logs(job, OfAttempt(0)), "a0-1\na0-2\n");
  for (int a = 1; a <= last - api::v1::kMaxAttempts + 1; ++a) {
    absl::Status s = LogsStatus(job, OfAttempt(a));
    EXPECT_TRUE(absl::IsNotFound(s)) << a << ": " << s;
    EXPECT_TRUE(absl::StrContains(s.message(), absl::StrCat("attempt ", a))) << s;
  }
  for (int a = last - api::v1::kMaxAttempts + 2; a <= last; ++a) {
    EXPECT_EQ(Logs(job, OfAttempt(a)), absl::StrCat("a", a, "-1\na", a, "-2\n"));
  }
}

// The operator died after the ended attempt's log moved and the next attempt's record was
// written, before its process started: the record is dropped at Start() and the pod created
// again, and neither attempt's log takes the other's lines.
TEST_F(AttemptLogsTest, ACrashBetweenTheMoveAndTheStartKeepsBothLogsApart) {
  model::Job job = MakeCountingJob("crash");
  RunAttempt(job, 0, /*first=*/true);
  ASSERT_TRUE(Delete(job, "Pod", "crash-worker-0").ok());
  const LocalLayout layout(dir_ + "/state");
  ASSERT_TRUE(layout.KeepAttemptLog(KeyOf(job), "crash-worker-0", 0).ok());
  ASSERT_TRUE(layout.CreateLog(KeyOf(job), "crash-worker-0").ok());
  ReplicaRecord pending;
  pending.job = KeyOf(job);
  pending.name = "crash-worker-0";
  pending.replica_type = "Worker";
  pending.attempt = 1;
  ASSERT_TRUE(store_->replicas()->PutReplica(pending).ok());
  backend_ = NewBackend();
  ASSERT_TRUE(backend_->Start().ok());
  RunAttempt(job, 1, /*first=*/true);
  EXPECT_EQ(Logs(job), "a1-1\na1-2\n");
  EXPECT_EQ(Logs(job, OfAttempt(0)), "a0-1\na0-2\n");
  backend_->Stop();
}

TEST_F(LocalBackendTest, GpusAreDisjointAcrossJobsAndWaitWhenBusy) {
  const std::string go = dir_ + "/go";
  Json gpu_container = {{"command", Argv(absl::StrCat("echo $CUDA_VISIBLE_DEVICES; while [ ! -e ",
                                                      go, " ]; do sleep 0.02; done"))},
                        {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}};
  model::Job a = MakeJob("ga", gpu_container);
  model::Job b = MakeJob("gb", gpu_container);
  model::Job c = MakeJob("gc", gpu_container);
  ASSERT_TRUE(Create(a, Pod(a)).ok());
  ASSERT_TRUE(Create(b, Pod(b)).ok());
  absl::Status busy = Create(c, Pod(c));
  EXPECT_TRUE(absl::IsFailedPrecondition(busy)) << busy;
  EXPECT_NE(busy.message().find("waiting for 1 GPUs"), std::string::npos) << busy;
  for (int i = 0; i < 500 && (Logs(a).empty() || Logs(b).empty()); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  const std::string a_devices = Logs(a);
  std::set<std::string> devices = {a_devices, Logs(b)};
  EXPECT_EQ(devices, (std::set<std::string>{"0\n", "1\n"}));
  // A job that goes away frees its GPUs for the one that waited.
  ASSERT_TRUE(backend_->Forget(a).ok());
  ASSERT_TRUE(Create(c, Pod(c)).ok());
  for (int i = 0; i < 500 && Logs(c).empty(); ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(Logs(c), a_devices);
  Touch(go);
  WaitPod(b, PodPhase::kSucceeded);
  WaitPod(c, PodPhase::kSucceeded);
}

TEST_F(LocalBackendTest, PortsOfTwoJobsAreDistinctAndRecorded) {
  model::Job a = MakeJob("pa", {{"command", Argv("exit 0")},
                                {"ports", Json::parse(R"([{"name":"http","containerPort":80}])")}});
  model::Job b = MakeJob("pb", {{"command", Argv("exit 0")},
                                {"ports", Json::parse(R"([{"name":"http","containerPort":80}])")}});
  auto pa = backend_->AddressPlanFor(a);
  auto pb = backend_->AddressPlanFor(b);
  const int port_a = pa->Port(a, "Worker", 0, "http", 80);
  const int port_b = pb->Port(b, "Worker", 0, "http", 80);
  EXPECT_NE(port_a, 80);
  EXPECT_NE(port_a, port_b);
  EXPECT_EQ(pa->Host(a, "Worker", 0), "127.0.0.1");
  ASSERT_TRUE(Create(a, Pod(a)).ok());
  auto records = store_->replicas()->ListReplicas(KeyOf(a));
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ((*records)[0].ports.at("http"), port_a);
  ASSERT_TRUE(backend_->Forget(a).ok());
  auto left = store_->replicas()->ListPortReservations();
  ASSERT_TRUE(left.ok());
  for (const auto& r : *left) EXPECT_EQ(r.job.name, "pb");
}

TEST_F(LocalBackendTest, LogsTailAndFollow) {
  const std::string go = dir_ + "/go";
  model::Job job = MakeJob(
      "logs", {{"command", Argv(absl::StrCat("for i in 1 2 3; do echo line$i; done; while [ ! -e ",
                                             go, " ]; do sleep 0.02; done; echo end"))}});
  ASSERT_TRUE(Create(job, Pod(job)).ok());
  for (int i = 0; i < 500 && Logs(job).size() < 18; ++i) absl::SleepFor(absl::Milliseconds(10));
  LogOptions tail;
  tail.tail_lines = 2;
  tail.replica = "worker-0";
  EXPECT_EQ(Logs(job, tail), "line2\nline3\n");

  LogOptions nope;
  nope.replica = "master-0";
  std::atomic<bool> cancelled{false};
  EXPECT_TRUE(absl::IsNotFound(backend_->StreamLogs(
      job, nope, [](const std::string&, const std::string&) { return true; }, cancelled)));

  LogOptions follow;
  follow.follow = true;
  follow.tail_lines = 1;
  std::string followed;
  absl::Mutex mu;
  std::thread t([&] {
    absl::Status s = backend_->StreamLogs(
        job, follow,
        [&](const std::string& replica, const std::string& d) {
          EXPECT_EQ(replica, "worker-0");
          absl::MutexLock lock(&mu);
          followed += d;
          return true;
        },
        cancelled);
    EXPECT_TRUE(s.ok()) << s;
  });
  absl::SleepFor(absl::Milliseconds(200));
  Touch(go);
  t.join();  // ends by itself once the replica ended and its log is drained
  EXPECT_EQ(followed, "line3\nend\n");
}

TEST_F(LocalBackendTest, FollowEndsWhenCancelled) {
  model::Job job = MakeJob("cancel", {{"command", Argv("echo x; sleep 300")}});
  ASSERT_TRUE(Create(job, Pod(job)).ok());
  std::atomic<bool> cancelled{false};
  LogOptions follow;
  follow.follow = true;
  std::thread t([&] {
    EXPECT_TRUE(
        backend_
            ->StreamLogs(
                job, follow, [](const std::string&, const std::string&) { return true; }, cancelled)
            .ok());
  });
  absl::SleepFor(absl::Milliseconds(200));
  cancelled = true;
  t.join();
}

TEST_F(LocalBackendTest, OtherObjectsAreRecordedDurablyAndForgetCleansUp) {
  model::Job job = MakeJob("objs", {{"command", Argv("echo x")}});
  model::KubeObject svc;
  svc.kind = "Service";
  svc.name = "objs-worker-0";
  model::KubeObject cm;
  cm.kind = "ConfigMap";
  cm.name = "objs-config";
  cm.body = Json::parse(R"({"data":{"hostfile":"127.0.0.1 slots=1\n"}})");
  ASSERT_TRUE(Create(job, svc).ok());
  ASSERT_TRUE(Create(job, cm).ok());
  ASSERT_TRUE(Create(job, svc).ok());
  ASSERT_TRUE(Create(job, Pod(job)).ok());
  WaitPod(job, PodPhase::kSucceeded);
  // One directory per job holds its pods' files (local_layout.h).
  EXPECT_EQ(ReadFile(dir_ + "/state/replicas/ns/objs/objs-worker-0.log").value_or(""), "x\n");
  EXPECT_TRUE(ReadFile(dir_ + "/state/replicas/ns/objs/objs-worker-0.exit").ok());
  auto hostfile = ReadFile(dir_ + "/state/configmaps/ns/objs/objs-config/hostfile");
  ASSERT_TRUE(hostfile.ok()) << hostfile.status();
  EXPECT_EQ(*hostfile, "127.0.0.1 slots=1\n");

  backend_ = NewBackend();
  auto seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok());
  ASSERT_EQ(seen->objects.size(), 2u);
  EXPECT_EQ(seen->objects[0].kind, "ConfigMap");
  EXPECT_EQ(seen->objects[1].kind, "Service");
  ASSERT_TRUE(Delete(job, "Service", "objs-worker-0").ok());
  seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(seen->objects.size(), 1u);

  ASSERT_TRUE(backend_->Forget(job).ok());
  ASSERT_TRUE(backend_->Forget(job).ok()) << "idempotent";
  seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok());
  EXPECT_TRUE(seen->pods.empty());
  EXPECT_TRUE(seen->objects.empty());
  EXPECT_TRUE(
      absl::IsNotFound(ReadFile(dir_ + "/state/replicas/ns/objs/objs-worker-0.log").status()));
  struct stat st;
  EXPECT_NE(stat((dir_ + "/state/replicas/ns/objs").c_str(), &st), 0) << "the job's directory";
}

// The store is the truth for a job's objects, finished or not (nothing is kept in memory: a
// store of finished jobs must not cost memory per job); a change after the job
// finished is seen too.
TEST_F(LocalBackendTest, FinishedJobsObjectsAreReadFromTheStore) {
  model::Job job = MakeJob("done", {{"command", Argv("true")}});
  model::KubeObject svc;
  svc.kind = "Service";
  svc.name = "done-worker-0";
  ASSERT_TRUE(Create(job, svc).ok());
  auto seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(seen->objects.size(), 1u);

  job.mutable_status()->add_conditions()->set_type("Succeeded");
  job.mutable_status()->mutable_conditions(0)->set_status("True");
  ASSERT_TRUE(reconcile::IsFinished(job.status()));
  seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok()) << seen.status();
  ASSERT_EQ(seen->objects.size(), 1u);
  EXPECT_EQ(seen->objects[0].name, "done-worker-0");

  svc.name = "done-extra";
  ASSERT_TRUE(Create(job, svc).ok());
  seen = backend_->Observe(job);
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(seen->objects.size(), 2u) << "the store is the truth";
}

}  // namespace
}  // namespace coach::backend::local
