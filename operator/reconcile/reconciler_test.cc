#include "operator/reconcile/reconciler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "operator/model/replicas.h"
#include "operator/model/testing/job_builder.h"
#include "operator/model/testing/observed_builder.h"
#include "operator/model/testing/result_text.h"
#include "operator/reconcile/conditions.h"

namespace coach::reconcile {
namespace {

using model::Action;
using model::PodPhase;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using namespace coach::reconcile::testing;  // NOLINT

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

std::vector<std::string> Acts(const model::ReconcileResult& r) { return ActionsText(r); }
std::vector<std::string> Reasons(const model::ReconcileResult& r) { return EventReasons(r); }

// "Type=Status" for every condition, in order.
std::vector<std::string> Conds(const model::JobStatus& s) {
  std::vector<std::string> out;
  for (const auto& c : s.conditions()) out.push_back(c.type() + "=" + c.status());
  return out;
}

const api::v1::JobCondition* Cond(const model::JobStatus& s, const std::string& type) {
  for (const auto& c : s.conditions()) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}

model::Job WithStatus(model::Job job, const model::JobStatus& status) {
  *job.mutable_status() = status;
  return job;
}

TEST(ReconcileTest, FreshJobCreatesEverythingOnce) {
  model::Job job = SeedPyTorchJob();
  auto r = Reconcile(job, {}, kT0, {});
  EXPECT_THAT(
      Acts(r),
      ElementsAre("create Pod/pytorch-mnist-master-0", "create Service/pytorch-mnist-master-0",
                  "create Pod/pytorch-mnist-worker-0", "create Pod/pytorch-mnist-worker-1",
                  "create Service/pytorch-mnist-worker-0",
                  "create Service/pytorch-mnist-worker-1"));
  EXPECT_TRUE(r.status_changed);
  EXPECT_THAT(Conds(r.status), ElementsAre("Created=True"));
  EXPECT_EQ(Cond(r.status, "Created")->reason(), "PyTorchJobCreated");
  EXPECT_EQ(FromTimestamp(r.status.start_time()), kT0);
  EXPECT_EQ(FromTimestamp(r.status.last_reconcile_time()), kT0);
  EXPECT_EQ(r.status.replica_statuses().at("Worker").selector(),
            "training.kubeflow.org/job-name=pytorch-mnist,training.kubeflow.org/operator-name="
            "pytorchjob-controller,training.kubeflow.org/replica-type=worker");
  EXPECT_FALSE(r.requeue_at.has_value());
  EXPECT_EQ(Reasons(r)[0], "SuccessfulCreatePod");

  // The backend applied it; the pods are pending. Nothing is created twice, and the
  // status does not change again.
  model::Job seen = WithStatus(job, r.status);
  auto again = Reconcile(seen, ObservedBuilder(job).All(PodPhase::kPending).Build(),
                         kT0 + absl::Seconds(5), {});
  EXPECT_THAT(Acts(again), IsEmpty());
  EXPECT_FALSE(again.status_changed);
  EXPECT_THAT(again.events, IsEmpty());
  // A crash between creates: only what is missing is created.
  auto partial = Reconcile(seen, ObservedBuilder(job).Pending("Master", 0).Build(), kT0, {});
  EXPECT_THAT(Acts(partial),
              ElementsAre("create Pod/pytorch-mnist-worker-0", "create Pod/pytorch-mnist-worker-1",
                          "create Service/pytorch-mnist-worker-0",
                          "create Service/pytorch-mnist-worker-1"));
}

// Pending explained: the Created condition's message and one event per new explanation; the
// default message once the job runs.
TEST(ReconcileTest, WaitingReplicasAreExplainedOnce) {
  model::Job job = SeedPyTorchJob();
  model::ReconcileConfig config;
  config.karpenter.enabled = true;
  model::Job seen = WithStatus(job, Reconcile(job, {}, kT0, config).status);
  model::ObservedState observed = ObservedBuilder(job).All(PodPhase::kPending).Build();
  for (model::ObservedPod& p : observed.pods) {
    p.waiting = {"provisioning", "karpenter", "gpu-workloads", "gpu-workloads-x", "launching"};
  }
  observed.pods[2].waiting = {"unschedulable", "karpenter", "gpu-workloads", "",
                              "no instance type has enough resources"};
  auto r = Reconcile(seen, observed, kT0 + absl::Seconds(1), config);
  const std::string want =
      "Master-0, Worker-0: NodeClaim gpu-workloads-x launching (NodePool gpu-workloads); "
      "Worker-1: Karpenter: no instance type has enough resources (NodePool gpu-workloads)";
  EXPECT_TRUE(r.status_changed);
  EXPECT_EQ(Cond(r.status, "Created")->message(), want);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].type, "Warning");
  EXPECT_EQ(r.events[0].reason, "Unschedulable");
  EXPECT_EQ(r.events[0].message, want);
  // The same facts again: no event, no status write.
  seen = WithStatus(job, r.status);
  auto again = Reconcile(seen, observed, kT0 + absl::Seconds(2), config);
  EXPECT_THAT(again.events, IsEmpty());
  EXPECT_FALSE(again.status_changed);
  // One more replica in a state already reported: the message follows, no new event.
  observed.pods[2].waiting = observed.pods[0].waiting;
  auto joined = Reconcile(seen, observed, kT0 + absl::Seconds(2), config);
  EXPECT_EQ(Cond(joined.status, "Created")->message(),
            "Master-0, Worker-0, Worker-1: NodeClaim gpu-workloads-x launching (NodePool "
            "gpu-workloads)");
  EXPECT_THAT(joined.events, IsEmpty());
  // Everything runs: the default message comes back, without an event.
  auto running = Reconcile(seen, ObservedBuilder(job).All(PodPhase::kRunning).Build(),
                           kT0 + absl::Seconds(3), config);
  EXPECT_EQ(Cond(running.status, "Created")->message(), "PyTorchJob pytorch-mnist is created.");
  EXPECT_THAT(running.events, IsEmpty());
}

TEST(ReconcileTest, IdempotentForEveryKind) {
  const std::vector<model::Job> jobs = {
      SeedPyTorchJob(),
      MakeTFJob("ns", "tf").PS(1).Workers(2).Chief(1).Build(),
      MakeXGBoostJob("ns", "xg").Master(1).Workers(2).Build(),
      MakeMPIJob("ns", "mpi").Launcher(1).Workers(2).Build(),
      MakePaddleJob("ns", "pd").Workers(2).Build(),
      MakeJAXJob("ns", "jx").Workers(2).Build(),
  };
  model::ReconcileConfig config;
  config.gang_scheduler = model::GangScheduler::kVolcano;
  for (const model::Job& job : jobs) {
    SCOPED_TRACE(job.metadata().name());
    auto first = Reconcile(job, {}, kT0, config);
    ASSERT_FALSE(first.actions.empty());
    ObservedBuilder observed(job);
    for (const Action& a : first.actions) {
      ASSERT_EQ(a.type, Action::Type::kCreate);
      if (a.object.kind == "Pod") continue;
      observed.Object(a.object.kind, a.object.name);
    }
    observed.All(PodPhase::kRunning);
    auto second = Reconcile(WithStatus(job, first.status), observed.Build(), kT0, config);
    EXPECT_THAT(Acts(second), IsEmpty());
    EXPECT_TRUE(HasTrueCondition(second.status, "Running")) << Conds(second.status).size();
    auto third =
        Reconcile(WithStatus(job, second.status), observed.Build(), kT0 + absl::Seconds(1), config);
    EXPECT_THAT(Acts(third), IsEmpty());
    EXPECT_FALSE(third.status_changed);
  }
}

struct SuccessCase {
  std::string label;
  model::Job job;
  model::ObservedState observed;
  bool succeeded;
};

TEST(ReconcileTest, SuccessRulesPerKind) {
  model::Job pt = MakePyTorchJob("ns", "pt").Master(1).Workers(2).Build();
  model::Job ptw = MakePyTorchJob("ns", "ptw").Workers(2).Build();
  model::Job pte = MakePyTorchJob("ns", "pte").Workers(2).Elastic(1, 2).Build();
  model::Job tfc = MakeTFJob("ns", "tfc").Chief(1).Workers(2).Build();
  model::Job tfw = MakeTFJob("ns", "tfw").PS(1).Workers(2).Build();
  model::Job tfa = MakeTFJob("ns", "tfa").PS(1).Workers(2).SuccessPolicy("AllWorkers").Build();
  model::Job xg = MakeXGBoostJob("ns", "xg").Master(1).Workers(1).Build();
  model::Job mpi = MakeMPIJob("ns", "mpi").Launcher(1).Workers(2).Build();
  model::Job pd = MakePaddleJob("ns", "pd").Master(1).Workers(1).Build();
  model::Job jx = MakeJAXJob("ns", "jx").Workers(2).Build();
  const std::vector<SuccessCase> cases = {
      {"pytorch master done", pt,
       ObservedBuilder(pt).Succeeded("Master", 0).Running("Worker", 0).Running("Worker", 1).Build(),
       true},
      {"pytorch workers only master running", pt,
       ObservedBuilder(pt)
           .Running("Master", 0)
           .Succeeded("Worker", 0)
           .Succeeded("Worker", 1)
           .Build(),
       false},
      {"pytorch no master all workers", ptw,
       ObservedBuilder(ptw).Succeeded("Worker", 0).Succeeded("Worker", 1).Build(), true},
      {"pytorch no master one worker", ptw,
       ObservedBuilder(ptw).Succeeded("Worker", 0).Running("Worker", 1).Build(), false},
      {"pytorch elastic any worker", pte,
       ObservedBuilder(pte).Succeeded("Worker", 1).Running("Worker", 0).Build(), true},
      {"tf chief", tfc,
       ObservedBuilder(tfc).Succeeded("Chief", 0).Running("Worker", 0).Running("Worker", 1).Build(),
       true},
      {"tf workers done chief running", tfc,
       ObservedBuilder(tfc)
           .Running("Chief", 0)
           .Succeeded("Worker", 0)
           .Succeeded("Worker", 1)
           .Build(),
       false},
      {"tf worker 0", tfw,
       ObservedBuilder(tfw).Running("PS", 0).Succeeded("Worker", 0).Running("Worker", 1).Build(),
       true},
      {"tf worker 1 only", tfw,
       ObservedBuilder(tfw).Running("PS", 0).Running("Worker", 0).Succeeded("Worker", 1).Build(),
       false},
      {"tf all workers partial", tfa,
       ObservedBuilder(tfa).Running("PS", 0).Succeeded("Worker", 0).Running("Worker", 1).Build(),
       false},
      {"tf all workers", tfa,
       ObservedBuilder(tfa).Running("PS", 0).Succeeded("Worker", 0).Succeeded("Worker", 1).Build(),
       true},
      {"xgboost master", xg,
       ObservedBuilder(xg).Succeeded("Master", 0).Running("Worker", 0).Build(), true},
      {"xgboost worker only", xg,
       ObservedBuilder(xg).Running("Master", 0).Succeeded("Worker", 0).Build(), false},
      {"mpi launcher", mpi,
       ObservedBuilder(mpi)
           .Succeeded("Launcher", 0)
           .Running("Worker", 0)
           .Running("Worker", 1)
           .Build(),
       true},
      {"mpi workers", mpi,
       ObservedBuilder(mpi)
           .Running("Launcher", 0)
           .Succeeded("Worker", 0)
           .Succeeded("Worker", 1)
           .Build(),
       false},
      {"paddle master", pd, ObservedBuilder(pd).Succeeded("Master", 0).Running("Worker", 0).Build(),
       true},
      {"jax all", jx, ObservedBuilder(jx).Succeeded("Worker", 0).Succeeded("Worker", 1).Build(),
       true},
      {"jax one", jx, ObservedBuilder(jx).Succeeded("Worker", 0).Running("Worker", 1).Build(),
       false},
  };
  for (const SuccessCase& c : cases) {
    SCOPED_TRACE(c.label);
    auto r = Reconcile(c.job, c.observed, kT0, {});
    EXPECT_EQ(HasTrueCondition(r.status, "Succeeded"), c.succeeded);
    if (c.succeeded) {
      EXPECT_EQ(FromTimestamp(r.status.completion_time()), kT0);
      EXPECT_FALSE(HasTrueCondition(r.status, "Running"));
      EXPECT_THAT(
          Reasons(r),
          ::testing::Contains(std::string(api::v1::FindKind(c.job.kind())->name) + "Succeeded"));
      for (const Action& a : r.actions) EXPECT_NE(a.type, Action::Type::kCreate);
    } else {
      EXPECT_TRUE(HasTrueCondition(r.status, "Running"));
    }
  }
}

// Upstream v1.9 pkg/controller.v1/mpi/mpijob_controller.go: UpdateJobStatus sets Running
// when the Launcher's replica status has active > 0 (its pod is Running), whatever the
// Workers do; updateMPIJobStatus's "launcher and every worker running" condition is
// written to a status that UpdateJobStatus replaces.
TEST(ReconcileTest, MpiJobRunsOnAnActiveLauncher) {
  model::Job mpi = MakeMPIJob("ns", "mpi").Launcher(1).Workers(2).Build();
  struct Case {
    const char* scenario;
    model::ObservedState observed;
    bool running;
  };
  // clang-format off
  const Case cases[] = {
      {"launcher and workers running", ObservedBuilder(mpi).Running("Launcher", 0).Running("Worker", 0).Running("Worker", 1).Build(), true},
      {"launcher running, a worker pending", ObservedBuilder(mpi).Running("Launcher", 0).Running("Worker", 0).Pending("Worker", 1).Build(), true},
      {"launcher running, no worker yet", ObservedBuilder(mpi).Running("Launcher", 0).Build(), true},
      {"launcher pending, workers running", ObservedBuilder(mpi).Pending("Launcher", 0).Running("Worker", 0).Running("Worker", 1).Build(), false},
      {"nothing running", ObservedBuilder(mpi).Pending("Launcher", 0).Pending("Worker", 0).Pending("Worker", 1).Build(), false},
  };
  // clang-format on
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    auto r = Reconcile(mpi, c.observed, kT0, {});
    EXPECT_EQ(HasTrueCondition(r.status, "Running"), c.running);
    if (c.running) {
      EXPECT_EQ(Cond(r.status, "Running")->reason(), "MPIJobRunning");
    }
  }
}

TEST(ReconcileTest, ExitCodeRetryableRestartsNonRetryableFails) {
  model::Job job =
      MakePyTorchJob("ns", "ec").Master(1).Workers(2).RestartPolicy("ExitCode").Build();
  auto r137 = Reconcile(job,
                        ObservedBuilder(job)
                            .Running("Master", 0)
                            .Running("Worker", 0)
                            .Failed("Worker", 1, 137)
                            .Build(),
                        kT0, {});
  EXPECT_THAT(Acts(r137), ElementsAre("delete Pod/ec-worker-1"));
  EXPECT_TRUE(HasTrueCondition(r137.status, "Restarting"));
  EXPECT_EQ(Cond(r137.status, "Restarting")->reason(), "PyTorchJobRestarting");
  EXPECT_FALSE(HasTrueCondition(r137.status, "Failed"));
  EXPECT_THAT(Reasons(r137),
              ElementsAre("ExitedWithCode", "SuccessfulDeletePod", "PyTorchJobRestarting"));
  EXPECT_EQ(r137.events[0].message, "Pod: ns.ec-worker-1 exited with code 137");

  auto r1 = Reconcile(
      job,
      ObservedBuilder(job).Running("Master", 0).Running("Worker", 0).Failed("Worker", 1, 1).Build(),
      kT0, {});
  EXPECT_THAT(Acts(r1), IsEmpty());  // cleanPodPolicy None keeps everything
  EXPECT_TRUE(HasTrueCondition(r1.status, "Failed"));
  EXPECT_FALSE(HasTrueCondition(r1.status, "Restarting"));
  EXPECT_EQ(Cond(r1.status, "Failed")->reason(), "PyTorchJobFailed");
  EXPECT_EQ(FromTimestamp(r1.status.completion_time()), kT0);

  // Recreated pod running again: Running replaces Restarting.
  model::Job restarting = WithStatus(job, r137.status);
  auto back = Reconcile(restarting, ObservedBuilder(job).All(PodPhase::kRunning).Build(),
                        kT0 + absl::Seconds(10), {});
  EXPECT_THAT(Conds(back.status), ElementsAre("Created=True", "Running=True"));
}

// An elastic job above its minimum loses a Worker: the pod is recreated, the job stays Running
// (torchrun's agents train on with the others) and says so; below the minimum it restarts.
TEST(ReconcileTest, ElasticJobTrainsOnWithoutALostWorker) {
  model::Job job = MakePyTorchJob("ns", "el").Workers(3).Elastic(2, 3).Build();
  auto full = Reconcile(job, ObservedBuilder(job).All(PodPhase::kRunning).Build(), kT0, {});
  ASSERT_EQ(full.status.coach().elastic().changes_size(), 1);
  model::Job running = WithStatus(job, full.status);
  auto lost = Reconcile(running,
                        ObservedBuilder(job)
                            .Running("Worker", 0)
                            .Failed("Worker", 1, 137)
                            .Running("Worker", 2)
                            .Build(),
                        kT0 + absl::Seconds(5), {});
  EXPECT_THAT(Acts(lost), ElementsAre("delete Pod/el-worker-1"));
  EXPECT_THAT(Conds(lost.status), ElementsAre("Created=True", "Running=True"));
  EXPECT_THAT(Reasons(lost), ElementsAre("ExitedWithCode", "SuccessfulDeletePod", "ElasticShrink"));
  EXPECT_EQ(lost.status.coach().elastic().workers(), 2);

  auto back =
      Reconcile(WithStatus(job, lost.status), ObservedBuilder(job).All(PodPhase::kRunning).Build(),
                kT0 + absl::Seconds(30), {});
  EXPECT_THAT(Reasons(back), ElementsAre("ElasticGrow"));
  EXPECT_EQ(back.status.coach().elastic().changes_size(), 3);

  auto two_lost = Reconcile(WithStatus(job, back.status),
                            ObservedBuilder(job)
                                .Running("Worker", 0)
                                .Failed("Worker", 1, 137)
                                .Failed("Worker", 2, 137)
                                .Build(),
                            kT0 + absl::Seconds(40), {});
  EXPECT_TRUE(HasTrueCondition(two_lost.status, "Restarting"));
}

TEST(ReconcileTest, DeletesNameTheObservedInstance) {
  // A delete carries the UID of the pod the pass saw, so that a late one cannot remove the
  // newer pod a restart creates under the same name; without a UID (local) it names the pod.
  model::Job job =
      MakePyTorchJob("ns", "uid").Master(1).Workers(1).RestartPolicy("ExitCode").Build();
  model::ObservedState observed =
      ObservedBuilder(job).Running("Master", 0).Failed("Worker", 0, 137).Build();
  for (model::ObservedPod& pod : observed.pods) pod.uid = "uid-of-" + pod.name;
  auto r = Reconcile(job, observed, kT0, {});
  ASSERT_THAT(Acts(r), ElementsAre("delete Pod/uid-worker-0"));
  EXPECT_EQ(r.actions[0].object.body["metadata"]["uid"], "uid-of-uid-worker-0");

  observed.pods[1].uid.clear();
  auto no_uid = Reconcile(job, observed, kT0, {});
  ASSERT_THAT(Acts(no_uid), ElementsAre("delete Pod/uid-worker-0"));
  EXPECT_TRUE(no_uid.actions[0].object.body.is_null());
}

TEST(ReconcileTest, RestartPoliciesOnFailedPod) {
  struct Case {
    std::string policy;
    bool restarts;
  };
  for (const Case& c : std::vector<Case>{{"OnFailure", true}, {"Always", true}, {"Never", false}}) {
    SCOPED_TRACE(c.policy);
    model::Job job = MakeJAXJob("ns", "j").Workers(2).RestartPolicy(c.policy).Build();
    auto r = Reconcile(
        job, ObservedBuilder(job).Running("Worker", 0).Failed("Worker", 1, 2).Build(), kT0, {});
    EXPECT_EQ(HasTrueCondition(r.status, "Restarting"), c.restarts);
    EXPECT_EQ(HasTrueCondition(r.status, "Failed"), !c.restarts);
    EXPECT_EQ(Acts(r).size(), c.restarts ? 1u : 0u);
  }
  // XGBoost restarts only under ExitCode.
  model::Job xg =
      MakeXGBoostJob("ns", "xg").Master(1).Workers(1).RestartPolicy("OnFailure").Build();
  auto rx = Reconcile(xg, ObservedBuilder(xg).Running("Master", 0).Failed("Worker", 0, 1).Build(),
                      kT0, {});
  EXPECT_TRUE(HasTrueCondition(rx.status, "Failed"));
}

TEST(ReconcileTest, TerminatingRunningPodCountsAsFailed) {
  model::Job job = MakeTFJob("ns", "tf").Workers(2).Build();  // Never
  auto r = Reconcile(
      job, ObservedBuilder(job).Running("Worker", 0).Terminating("Worker", 1).Build(), kT0, {});
  EXPECT_EQ(r.status.replica_statuses().at("Worker").failed(), 1);
  EXPECT_EQ(r.status.replica_statuses().at("Worker").active(), 1);
  EXPECT_TRUE(HasTrueCondition(r.status, "Failed"));
}

TEST(ReconcileTest, BackoffLimitFailsJob) {
  model::Job job =
      MakePyTorchJob("ns", "b").Master(1).Workers(1).BackoffLimit(3).CleanPodPolicy("All").Build();
  auto under = Reconcile(
      job, ObservedBuilder(job).Running("Master", 0, 1).Running("Worker", 0, 1).Build(), kT0, {});
  EXPECT_FALSE(HasTrueCondition(under.status, "Failed"));
  auto over = Reconcile(
      job, ObservedBuilder(job).Running("Master", 0, 1).Running("Worker", 0, 2).Build(), kT0, {});
  ASSERT_TRUE(HasTrueCondition(over.status, "Failed"));
  EXPECT_THAT(Cond(over.status, "Failed")->message(), HasSubstr("backoff limit"));
  EXPECT_THAT(Acts(over),
              UnorderedElementsAre("delete Pod/b-master-0", "delete Service/b-master-0",
                                   "delete Pod/b-worker-0", "delete Service/b-worker-0"));
  // Restarts of a pod that crashed again (Failed) or is starting again (Pending) count
  // too: the local backend restarts by delete + create.
  auto failed = Reconcile(job,
                          ObservedBuilder(job)
                              .Running("Master", 0, 1)
                              .Pod("Worker", 0, PodPhase::kFailed, 1, 2)
                              .Build(),
                          kT0, {});
  EXPECT_TRUE(HasTrueCondition(failed.status, "Failed"));
  auto pending = Reconcile(job,
                           ObservedBuilder(job)
                               .Pod("Master", 0, PodPhase::kPending, std::nullopt, 3)
                               .Running("Worker", 0)
                               .Build(),
                           kT0, {});
  EXPECT_TRUE(HasTrueCondition(pending.status, "Failed"));
  // Never replicas do not count.
  model::Job never =
      MakePyTorchJob("ns", "n").Master(1).RestartPolicy("Never").BackoffLimit(1).Build();
  auto rn = Reconcile(never, ObservedBuilder(never).Running("Master", 0, 5).Build(), kT0, {});
  EXPECT_FALSE(HasTrueCondition(rn.status, "Failed"));
}

TEST(ReconcileTest, ActiveDeadlineRequeuesWithoutEventsThenFails) {
  model::Job job = MakeJAXJob("ns", "d").Workers(1).ActiveDeadlineSeconds(100).Build();
  auto first = Reconcile(job, {}, kT0, {});
  ASSERT_TRUE(first.requeue_at.has_value());
  EXPECT_EQ(*first.requeue_at, kT0 + absl::Seconds(100));
  model::Job running = WithStatus(job, first.status);
  auto obs = ObservedBuilder(job).All(PodPhase::kRunning).Build();
  auto second = Reconcile(running, obs, kT0 + absl::Seconds(10), {});
  running = WithStatus(job, second.status);
  // Steady state: no pod event, no action, but the deadline is still scheduled.
  auto steady = Reconcile(running, obs, kT0 + absl::Seconds(50), {});
  EXPECT_THAT(steady.events, IsEmpty());
  EXPECT_THAT(steady.actions, IsEmpty());
  EXPECT_EQ(steady.requeue_at, kT0 + absl::Seconds(100));
  auto fired = Reconcile(running, obs, kT0 + absl::Seconds(100), {});
  ASSERT_TRUE(HasTrueCondition(fired.status, "Failed"));
  EXPECT_THAT(Cond(fired.status, "Failed")->message(), HasSubstr("deadline"));
  EXPECT_FALSE(HasTrueCondition(fired.status, "Running"));
  EXPECT_FALSE(fired.requeue_at.has_value());
}

TEST(ReconcileTest, TtlAfterFinished) {
  model::Job job = MakeJAXJob("ns", "t")
                       .Workers(1)
                       .TtlSecondsAfterFinished(60)
                       .StartTime(kT0)
                       .CompletionTime(kT0 + absl::Seconds(10))
                       .Condition("Created", "True")
                       .Condition("Succeeded", "True")
                       .Build();
  auto early = Reconcile(job, {}, kT0 + absl::Seconds(30), {});
  EXPECT_THAT(Acts(early), IsEmpty());
  EXPECT_EQ(early.requeue_at, kT0 + absl::Seconds(70));
  auto due = Reconcile(job, {}, kT0 + absl::Seconds(70), {});
  EXPECT_THAT(Acts(due), ElementsAre("deletejob JAXJob/t"));
}

TEST(ReconcileTest, CleanPodPolicyAfterFinish) {
  struct Case {
    std::string policy;
    std::vector<std::string> actions;
  };
  const std::vector<Case> cases = {
      {"None", {}},
      {"Running", {"delete Pod/c-worker-0", "delete Service/c-worker-0"}},
      {"All",
       {"delete Pod/c-master-0", "delete Service/c-master-0", "delete Pod/c-worker-0",
        "delete Service/c-worker-0"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.policy);
    model::Job job =
        MakePyTorchJob("ns", "c").Master(1).Workers(1).CleanPodPolicy(c.policy).Build();
    auto r = Reconcile(
        job, ObservedBuilder(job).Succeeded("Master", 0).Running("Worker", 0).Build(), kT0, {});
    ASSERT_TRUE(HasTrueCondition(r.status, "Succeeded"));
    EXPECT_THAT(Acts(r), ::testing::UnorderedElementsAreArray(c.actions));
    // Next pass (finished branch): active moves to succeeded.
    auto next = Reconcile(WithStatus(job, r.status),
                          ObservedBuilder(job).Succeeded("Master", 0).Build(), kT0, {});
    EXPECT_EQ(next.status.replica_statuses().at("Worker").active(), 0);
    EXPECT_EQ(next.status.replica_statuses().at("Worker").succeeded(), 1);
  }
}

// A pod in its grace period (deletionTimestamp set) is not deleted again by cleanPodPolicy,
// suspension or scale-down: every pass that acts is followed by another, so a repeated delete
// would spin until the pod is gone (seen on a real node: ~200 deletes a second for 30 s).
TEST(ReconcileTest, PodsBeingDeletedAreNotDeletedAgain) {
  model::Job cleaned =
      MakePyTorchJob("ns", "c").Master(1).Workers(1).CleanPodPolicy("Running").Build();
  model::Job suspended = MakePyTorchJob("ns", "c")
                             .Master(1)
                             .Workers(1)
                             .StartTime(kT0)
                             .Condition("Created", "True")
                             .Condition("Running", "True")
                             .Build();
  suspended.mutable_spec()->mutable_run_policy()->set_suspend(true);
  model::Job scaled = MakePyTorchJob("ns", "c").Master(1).Workers(1).Build();
  struct Case {
    const char* scenario;
    model::Job job;
    model::ObservedState observed;
  };
  const Case cases[] = {
      {"cleanPodPolicy", cleaned,
       ObservedBuilder(cleaned).Succeeded("Master", 0).Terminating("Worker", 0).Build()},
      {"suspend", suspended,
       ObservedBuilder(suspended).Terminating("Master", 0).Terminating("Worker", 0).Build()},
      {"scale-down", scaled,
       ObservedBuilder(scaled)
           .Running("Master", 0)
           .Running("Worker", 0)
           .Terminating("Worker", 1)
           .Build()},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    auto r = Reconcile(c.job, c.observed, kT0, {});
    for (const std::string& act : Acts(r))
      EXPECT_EQ(act.find("delete Pod/"), std::string::npos) << act;
    // Their Services are still removed once; with those gone, the terminating pods cause no
    // action at all.
    model::ObservedState without_services = c.observed;
    without_services.objects.clear();
    auto again = Reconcile(WithStatus(c.job, r.status), without_services, kT0, {});
    for (const std::string& act : Acts(again)) {
      EXPECT_EQ(act.find("delete"), std::string::npos) << act;
    }
  }
}

TEST(ReconcileTest, RefusedJobFailsWithTheReasonAndCreatesNothing) {
  struct Case {
    const char* scenario;
    model::Job job;
    model::ObservedState observed;
    std::vector<std::string> actions;
  };
  model::Job fresh = MakePyTorchJob("ns", "r").Master(1).Workers(1).Build();
  model::Job all = MakePyTorchJob("ns", "r").Master(1).Workers(1).CleanPodPolicy("All").Build();
  const Case cases[] = {
      // Nothing exists yet: no pod is created, the job fails at once.
      {"fresh job", fresh, ObservedBuilder(fresh).Build(), {}},
      // Objects refused midway: what exists is cleaned up per cleanPodPolicy, as on failure.
      {"cleanPodPolicy All",
       all,
       ObservedBuilder(all).Running("Master", 0).Build(),
       {"delete Pod/r-master-0", "delete Service/r-master-0"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    model::ObservedState observed = c.observed;
    observed.refused = "metadata.name: must be a DNS-1035 label";
    auto r = Reconcile(c.job, observed, kT0, {});
    EXPECT_THAT(Acts(r), ::testing::UnorderedElementsAreArray(c.actions));
    ASSERT_TRUE(HasTrueCondition(r.status, "Failed"));
    EXPECT_EQ(Cond(r.status, "Failed")->reason(), "PyTorchJobFailedValidation");
    EXPECT_EQ(Cond(r.status, "Failed")->message(), "metadata.name: must be a DNS-1035 label");
    int warnings = 0;
    for (const auto& e : r.events) {
      if (e.reason != "PyTorchJobFailedValidation") continue;
      ++warnings;
      EXPECT_EQ(e.type, "Warning");
      EXPECT_EQ(e.message, "metadata.name: must be a DNS-1035 label");
    }
    EXPECT_EQ(warnings, 1);
    EXPECT_TRUE(r.status.has_completion_time());
    // Failed is final: the next pass changes nothing and emits nothing.
    model::ObservedState gone = ObservedBuilder(c.job).Build();  // the deletions took effect
    gone.refused = observed.refused;
    auto next = Reconcile(WithStatus(c.job, r.status), gone, kT0 + absl::Seconds(1), {});
    EXPECT_FALSE(next.status_changed);
    EXPECT_THAT(Reasons(next), IsEmpty());
  }
}

TEST(ReconcileTest, SuspendAndResume) {
  model::ReconcileConfig config;
  config.gang_scheduler = model::GangScheduler::kVolcano;
  model::Job job = MakePyTorchJob("ns", "s")
                       .Master(1)
                       .Workers(1)
                       .StartTime(kT0)
                       .Condition("Created", "True")
                       .Condition("Running", "True")
                       .Build();
  model::Job suspended = job;
  suspended.mutable_spec()->mutable_run_policy()->set_suspend(true);
  auto obs = ObservedBuilder(job).All(PodPhase::kRunning).Object("PodGroup", "s").Build();
  auto r = Reconcile(suspended, obs, kT0 + absl::Seconds(5), config);
  EXPECT_THAT(Acts(r), UnorderedElementsAre("delete Pod/s-master-0", "delete Service/s-master-0",
                                            "delete Pod/s-worker-0", "delete Service/s-worker-0",
                                            "delete PodGroup/s"));
  EXPECT_THAT(Conds(r.status), ElementsAre("Created=True", "Running=False", "Suspended=True"));
  EXPECT_EQ(Cond(r.status, "Suspended")->reason(), "PyTorchJobSuspended");
  EXPECT_THAT(Reasons(r), ::testing::Contains("PyTorchJobSuspended"));
  // Suspended with nothing left: stable, and silent. (Upstream's ReconcileJobs records the
  // PyTorchJobSuspended event again on every pass of a suspended job; coach says it once per
  // suspension, see reconciler.cc.)
  auto again = Reconcile(WithStatus(suspended, r.status), {}, kT0 + absl::Seconds(6), config);
  EXPECT_THAT(Acts(again), IsEmpty());
  EXPECT_FALSE(again.status_changed);
  EXPECT_THAT(Reasons(again), IsEmpty());
  // Resume.
  auto resumed = Reconcile(WithStatus(job, r.status), {}, kT0 + absl::Seconds(100), config);
  EXPECT_EQ(Cond(resumed.status, "Suspended")->status(), "False");
  EXPECT_EQ(Cond(resumed.status, "Suspended")->reason(), "PyTorchJobResumed");
  EXPECT_EQ(FromTimestamp(resumed.status.start_time()), kT0 + absl::Seconds(100));
  EXPECT_THAT(Acts(resumed),
              ElementsAre("create PodGroup/s", "create Pod/s-master-0", "create Service/s-master-0",
                          "create Pod/s-worker-0", "create Service/s-worker-0"));
}

// Kueue: a job its webhook suspended waits in a queue (Queued, one WaitingForQuota event), runs
// when Kueue unsuspends it (Queued=False, admitted), and an eviction suspends it again without a
// failure.
TEST(ReconcileTest, QueuedWhileKueueHoldsTheJob) {
  model::Job job = MakePyTorchJob("ns", "q").Master(1).Workers(1).Build();
  model::Job held = job;
  held.mutable_spec()->mutable_run_policy()->set_suspend(true);
  model::ObservedState obs;
  obs.queue.emplace();
  obs.queue->workload = "pytorchjob-q-1";
  obs.queue->local_queue = "user-queue";
  obs.queue->cluster_queue = "cluster-queue";
  obs.queue->message = "insufficient unused quota for cpu in flavor default-flavor, 2 more needed";
  const std::string words =
      "Waiting for quota: LocalQueue user-queue -> ClusterQueue cluster-queue: insufficient "
      "unused quota for cpu in flavor default-flavor, 2 more needed";
  auto r = Reconcile(held, obs, kT0, {});
  EXPECT_THAT(Acts(r), IsEmpty());
  EXPECT_THAT(Conds(r.status), ElementsAre("Created=True", "Suspended=True", "Queued=True"));
  EXPECT_EQ(Cond(r.status, "Queued")->reason(), "PyTorchJobWaitingForQuota");
  EXPECT_EQ(Cond(r.status, "Queued")->message(), words);
  int waiting = 0;
  for (const auto& e : r.events) {
    if (e.reason != "WaitingForQuota") continue;
    ++waiting;
    EXPECT_EQ(e.type, "Normal");
    EXPECT_EQ(e.message, words);
  }
  EXPECT_EQ(waiting, 1);
  // Still waiting: silent.
  auto again = Reconcile(WithStatus(held, r.status), obs, kT0 + absl::Seconds(1), {});
  EXPECT_FALSE(again.status_changed);
  EXPECT_THAT(Reasons(again), IsEmpty());
  // Admitted: Kueue unsuspends the job, coach creates its pods.
  obs.queue->quota_reserved = obs.queue->admitted = true;
  obs.queue->message = "";
  auto run = Reconcile(WithStatus(job, r.status), obs, kT0 + absl::Seconds(2), {});
  EXPECT_THAT(Acts(run), ::testing::Contains("create Pod/q-master-0"));
  EXPECT_EQ(Cond(run.status, "Queued")->status(), "False");
  EXPECT_EQ(Cond(run.status, "Queued")->reason(), "PyTorchJobAdmitted");
  EXPECT_EQ(Cond(run.status, "Queued")->message(), "Admitted by ClusterQueue cluster-queue.");
  // Evicted: suspended again, the pods deleted, no failure; the job waits again.
  obs.queue->quota_reserved = obs.queue->admitted = false;
  obs.queue->evicted = "Preempted";
  model::ObservedState running = ObservedBuilder(job).All(PodPhase::kRunning).Build();
  running.queue = obs.queue;
  auto evicted = Reconcile(WithStatus(held, run.status), running, kT0 + absl::Seconds(3), {});
  EXPECT_THAT(Acts(evicted), ::testing::Contains("delete Pod/q-master-0"));
  EXPECT_FALSE(HasTrueCondition(evicted.status, "Failed"));
  EXPECT_EQ(Cond(evicted.status, "Queued")->status(), "True");
  EXPECT_EQ(Conds(evicted.status).back(), "Queued=True");
  EXPECT_THAT(Cond(evicted.status, "Queued")->message(),
              ::testing::HasSubstr("cluster-queue (evicted: Preempted)"));
}

TEST(ReconcileTest, ManagedByAnotherControllerIsLeftAlone) {
  model::Job job =
      MakePyTorchJob("ns", "m").Master(1).ManagedBy("kueue.x-k8s.io/multikueue").Build();
  auto r = Reconcile(job, {}, kT0, {});
  EXPECT_THAT(r.actions, IsEmpty());
  EXPECT_THAT(r.events, IsEmpty());
  EXPECT_FALSE(r.status_changed);
  model::Job ours =
      MakePyTorchJob("ns", "m").Master(1).ManagedBy("kubeflow.org/training-operator").Build();
  EXPECT_FALSE(Reconcile(ours, {}, kT0, {}).actions.empty());
}

TEST(ReconcileTest, ScaleDownDeletesExtraPodsAndServices) {
  model::Job job = MakeJAXJob("ns", "sd").Workers(1).Build();
  auto obs =
      ObservedBuilder(MakeJAXJob("ns", "sd").Workers(3).Build()).All(PodPhase::kRunning).Build();
  auto r = Reconcile(job, obs, kT0, {});
  EXPECT_THAT(Acts(r),
              UnorderedElementsAre("delete Pod/sd-worker-1", "delete Service/sd-worker-1",
                                   "delete Pod/sd-worker-2", "delete Service/sd-worker-2"));
}

TEST(ConditionsTest, TransitionTimeOnlyOnFlip) {
  model::JobStatus s;
  UpdateCondition(s, "TFJob", "Running", "True", "Running", "m", kT0);
  UpdateCondition(s, "TFJob", "Running", "True", "Running", "m2", kT0 + absl::Seconds(5));
  EXPECT_EQ(FromTimestamp(s.conditions(0).last_update_time()), kT0);  // no-op
  UpdateCondition(s, "TFJob", "Restarting", "True", "Restarting", "r", kT0 + absl::Seconds(6));
  EXPECT_THAT(Conds(s), ElementsAre("Restarting=True"));
  UpdateCondition(s, "TFJob", "Running", "True", "Running", "m", kT0 + absl::Seconds(7));
  EXPECT_THAT(Conds(s), ElementsAre("Running=True"));
  UpdateCondition(s, "TFJob", "Succeeded", "True", "Succeeded", "ok", kT0 + absl::Seconds(9));
  EXPECT_THAT(Conds(s), ElementsAre("Running=False", "Succeeded=True"));
  EXPECT_EQ(FromTimestamp(s.conditions(0).last_transition_time()), kT0 + absl::Seconds(9));
  EXPECT_EQ(s.conditions(1).reason(), "TFJobSucceeded");
}

}  // namespace
}  // namespace coach::reconcile
