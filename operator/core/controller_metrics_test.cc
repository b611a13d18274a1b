// ControllerMetrics from plain PassRecords: what each record does to the gauges' entries and
// totals and to the counters.

#include "operator/core/controller_metrics.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "api/v1/kinds.h"

namespace coach::core {
namespace {

using model::PodPhase;
using Gauge = PassRecord::Gauge;

model::JobStatus Status(const std::string& condition, int active, int succeeded, int failed) {
  model::JobStatus status;
  if (!condition.empty()) {
    api::v1::JobCondition* c = status.add_conditions();
    c->set_type(condition);
    c->set_status("True");
  }
  api::v1::ReplicaStatus& replicas = (*status.mutable_replica_statuses())["Worker"];
  replicas.set_active(active);
  replicas.set_succeeded(succeeded);
  replicas.set_failed(failed);
  return status;
}

model::ObservedState Pods(std::initializer_list<PodPhase> phases) {
  model::ObservedState observed;
  for (PodPhase phase : phases) {
    model::ObservedPod pod;
    pod.phase = phase;
    observed.pods.push_back(pod);
  }
  return observed;
}

model::Job Job(const std::string& name, const model::JobStatus& status) {
  model::Job job;
  job.set_kind(api::v1::PYTORCH_JOB);
  job.mutable_metadata()->set_namespace_("default");
  job.mutable_metadata()->set_name(name);
  *job.mutable_status() = status;
  return job;
}

class ControllerMetricsTest : public ::testing::Test {
 protected:
  double Replicas(const std::string& phase) { return metrics_.replicas->Value({phase}); }
  double Jobs(const std::string& state) { return metrics_.jobs->Value({state}); }

  metrics::Registry registry_;
  metrics::OperatorMetrics metrics_{&registry_};
};

TEST_F(ControllerMetricsTest, GaugesFollowAnUnfinishedJobUntilItIsGone) {
  ControllerMetrics m(&metrics_, /*forget_finished_jobs=*/true);
  const store::JobKey key{"default", "a", "PyTorchJob"};
  PassRecord running;
  running.Observed(Pods({PodPhase::kRunning, PodPhase::kPending}), Status("Running", 1, 0, 0));
  m.RecordPass(key, running);
  EXPECT_EQ(m.entries(), 1u);
  EXPECT_EQ(Replicas("Running"), 1);
  EXPECT_EQ(Replicas("Pending"), 1);
  EXPECT_EQ(Jobs("Running"), 1);

  // A pass that ended early leaves the gauge; the next observation replaces the job's counts.
  m.RecordPass(key, PassRecord());
  EXPECT_EQ(Replicas("Pending"), 1);
  PassRecord both;
  both.Observed(Pods({PodPhase::kRunning, PodPhase::kRunning}), Status("Running", 2, 0, 0));
  m.RecordPass(key, both);
  EXPECT_EQ(Replicas("Running"), 2);
  EXPECT_EQ(Replicas("Pending"), 0);
  EXPECT_EQ(Jobs("Running"), 1);

  PassRecord gone;
  gone.gauge = Gauge::kGone;
  m.RecordPass(key, gone);
  EXPECT_EQ(m.entries(), 0u);
  EXPECT_EQ(Replicas("Running"), 0);
  EXPECT_EQ(Jobs("Running"), 0);
}

// forget_finished_jobs: a finished job its status accounts for keeps no entry and stays
// counted; its next pass and its deletion take off what its stored status says.
TEST_F(ControllerMetricsTest, AFinishedJobCountedAsItsStatusSaysKeepsNoEntry) {
  ControllerMetrics m(&metrics_, /*forget_finished_jobs=*/true);
  const model::JobStatus done = Status("Succeeded", 0, 2, 0);
  const store::JobKey key{"default", "done", "PyTorchJob"};
  PassRecord finished;
  finished.Observed(Pods({PodPhase::kSucceeded, PodPhase::kSucceeded}), done);
  m.RecordPass(key, finished);
  EXPECT_EQ(m.entries(), 0u);
  EXPECT_EQ(Replicas("Succeeded"), 2);
  EXPECT_EQ(Jobs("Succeeded"), 1);

  // Its next pass reads what it was counted as from the status.
  PassRecord again = finished;
  again.counted_as = StoredGauge(done);
  m.RecordPass(key, again);
  EXPECT_EQ(m.entries(), 0u);
  EXPECT_EQ(Replicas("Succeeded"), 2);
  EXPECT_EQ(Jobs("Succeeded"), 1);

  m.JobDeleted(Job("done", done));
  EXPECT_EQ(Replicas("Succeeded"), 0);
  EXPECT_EQ(Jobs("Succeeded"), 0);

  // Without forget_finished_jobs the same job keeps its entry.
  ControllerMetrics kept(&metrics_, /*forget_finished_jobs=*/false);
  kept.RecordPass(key, finished);
  EXPECT_EQ(kept.entries(), 1u);
  kept.JobDeleted(Job("done", done));
  EXPECT_EQ(kept.entries(), 0u);
  EXPECT_EQ(Replicas("Succeeded"), 0);
}

// Start: stored finished jobs are counted before any pass, and every gauge is published.
TEST_F(ControllerMetricsTest, CountStoredThenPublish) {
  ControllerMetrics m(&metrics_, /*forget_finished_jobs=*/true);
  m.CountStored(Status("Failed", 0, 0, 1));
  m.PublishTotals();
  EXPECT_EQ(Replicas("Failed"), 1);
  EXPECT_EQ(Jobs("Failed"), 1);
  EXPECT_NE(registry_.Render().find("coach_jobs{state=\"Created\"} 0"), std::string::npos)
      << registry_.Render();
}

TEST_F(ControllerMetricsTest, CountersFromTheRecord) {
  ControllerMetrics m(&metrics_, /*forget_finished_jobs=*/true);
  PassRecord record;
  record.actions = {{model::Action::Type::kCreate, true},
                    {model::Action::Type::kCreate, false},
                    {model::Action::Type::kDelete, true}};
  record.Transitions(Job("t", {}), Status("Running", 1, 0, 0), Status("Failed", 0, 0, 1));
  m.RecordPass({"default", "t", "PyTorchJob"}, record);
  EXPECT_EQ(metrics_.actions_total->Value({"create", "ok"}), 1);
  EXPECT_EQ(metrics_.actions_total->Value({"create", "error"}), 1);
  EXPECT_EQ(metrics_.actions_total->Value({"delete", "ok"}), 1);
  EXPECT_EQ(metrics_.jobs_failed->Value({"default", "pytorch"}), 1);
  EXPECT_EQ(metrics_.jobs_successful->Value({"default", "pytorch"}), 0);

  PassRecord ttl;
  ttl.TtlDeleted(Job("t", {}));
  EXPECT_EQ(ttl.gauge, Gauge::kGone);
  m.RecordPass({"default", "t", "PyTorchJob"}, ttl);
  EXPECT_EQ(metrics_.jobs_ttl_deleted->Value({"default", "pytorch"}), 1);

  m.PassTimed(absl::Milliseconds(3), false);
  EXPECT_EQ(metrics_.reconcile_total->Value({"error"}), 1);
  m.QueueSize(4, 2);
  EXPECT_EQ(metrics_.workqueue_depth->Value({}), 4);
  EXPECT_EQ(metrics_.workqueue_delayed->Value({}), 2);
}

TEST(ControllerMetricsWithoutMetricsTest, KeepsNothing) {
  ControllerMetrics m(nullptr, /*forget_finished_jobs=*/false);
  EXPECT_FALSE(m.enabled());
  PassRecord record;
  record.Observed(Pods({PodPhase::kRunning}), Status("Running", 1, 0, 0));
  m.RecordPass({"default", "x", "PyTorchJob"}, record);
  m.PassTimed(absl::Seconds(1), true);
  m.BackendUp(true);
  EXPECT_EQ(m.entries(), 0u);
}

}  // namespace
}  // namespace coach::core
