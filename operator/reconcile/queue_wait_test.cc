#include "operator/reconcile/queue_wait.h"

#include <gtest/gtest.h>

#include "api/v1/job_conditions.h"

namespace coach::reconcile {
namespace {

using model::ObservedState;

constexpr char kQuota[] =
    "couldn't assign flavors to pod set node: insufficient unused quota for cpu in flavor "
    "default-flavor, 2 more needed";

ObservedState::Queue Pending() {
  ObservedState::Queue q;
  q.workload = "trainjob-a-1234";
  q.local_queue = "team-a";
  q.cluster_queue = "cluster-queue";
  q.message = kQuota;
  return q;
}

const api::v1::JobCondition* Queued(const model::JobStatus& status) {
  for (const auto& c : status.conditions()) {
    if (c.type() == api::v1::kJobQueued) return &c;
  }
  return nullptr;
}

TEST(QueueWaitTextTest, WaitingForQuotaNamesBothQueuesAndKueuesWords) {
  EXPECT_EQ(
      QueueWaitText(Pending()),
      std::string("Waiting for quota: LocalQueue team-a -> ClusterQueue cluster-queue: ") + kQuota);
}

TEST(QueueWaitTextTest, UnknownClusterQueueAndNoMessage) {
  ObservedState::Queue q = Pending();
  q.cluster_queue = "";
  q.message = "";
  EXPECT_EQ(QueueWaitText(q), "Waiting for quota: LocalQueue team-a");
}

TEST(QueueWaitTextTest, AdmissionChecksDeactivationAndEviction) {
  ObservedState::Queue q = Pending();
  q.quota_reserved = true;
  q.message = "The workload has not all admissionChecks";
  EXPECT_EQ(QueueWaitText(q),
            "Waiting for admission checks: LocalQueue team-a -> ClusterQueue cluster-queue: The "
            "workload has not all admissionChecks");
  q = Pending();
  q.evicted = "Preempted";
  EXPECT_EQ(QueueWaitText(q).substr(0, 82),
            "Waiting for quota: LocalQueue team-a -> ClusterQueue cluster-queue (evicted: Preem");
  // Kueue v0.19.0's words for a deactivated Workload, as it wrote them in tools/suites:kueue.
  q.active = false;
  q.evicted = "Deactivated";
  q.message = "The workload is deactivated";
  EXPECT_EQ(QueueWaitText(q),
            "Deactivated: LocalQueue team-a -> ClusterQueue cluster-queue: The workload is "
            "deactivated");
}

TEST(QueueWaitTextTest, AdmittedSaysNothing) {
  ObservedState::Queue q = Pending();
  q.quota_reserved = true;
  q.admitted = true;
  EXPECT_EQ(QueueWaitText(q), "");
}

TEST(QueueWaitTextTest, LongMessagesAreCut) {
  ObservedState::Queue q = Pending();
  q.message = std::string(2000, 'x');
  const std::string text = QueueWaitText(q);
  EXPECT_EQ(text.size(), 1000u);
  EXPECT_EQ(text.substr(997), "...");
}

TEST(UpdateQueuedTest, StartsOnceFollowsKueuesWordsAndEndsWhenTheJobRuns) {
  model::JobStatus status;
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  std::optional<ObservedState::Queue> q = Pending();

  // The wait starts: condition True, the text returned once for the event.
  EXPECT_EQ(UpdateQueued(status, "TrainJob", true, q, t0), QueueWaitText(*q));
  const api::v1::JobCondition* c = Queued(status);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status(), api::v1::kConditionTrue);
  EXPECT_EQ(c->reason(), "TrainJobWaitingForQuota");
  EXPECT_EQ(c->message(), QueueWaitText(*q));

  // The same facts again: nothing new.
  EXPECT_EQ(UpdateQueued(status, "TrainJob", true, q, t0 + absl::Seconds(1)), "");
  EXPECT_EQ(Queued(status)->last_update_time().seconds(), 1000);

  // Kueue's words change: the message follows, no new event, the transition time stays.
  q->message = "insufficient unused quota for cpu in flavor default-flavor, 1 more needed";
  EXPECT_EQ(UpdateQueued(status, "TrainJob", true, q, t0 + absl::Seconds(2)), "");
  c = Queued(status);
  EXPECT_EQ(c->message(), QueueWaitText(*q));
  EXPECT_EQ(c->last_update_time().seconds(), 1002);
  EXPECT_EQ(c->last_transition_time().seconds(), 1000);

  // Admitted but not yet unsuspended: the last words stay.
  q->quota_reserved = true;
  q->admitted = true;
  EXPECT_EQ(UpdateQueued(status, "TrainJob", true, q, t0 + absl::Seconds(3)), "");
  EXPECT_EQ(Queued(status)->status(), api::v1::kConditionTrue);

  // Running: admitted, by the ClusterQueue.
  EXPECT_EQ(UpdateQueued(status, "TrainJob", false, q, t0 + absl::Seconds(4)), "");
  c = Queued(status);
  EXPECT_EQ(c->status(), api::v1::kConditionFalse);
  EXPECT_EQ(c->reason(), "TrainJobAdmitted");
  EXPECT_EQ(c->message(), "Admitted by ClusterQueue cluster-queue.");

  // Evicted (suspended again, quota released): a new wait, a new event.
  q->quota_reserved = false;
  q->admitted = false;
  q->evicted = "Preempted";
  EXPECT_NE(UpdateQueued(status, "TrainJob", true, q, t0 + absl::Seconds(5)), "");
  EXPECT_EQ(Queued(status)->status(), api::v1::kConditionTrue);
}

TEST(UpdateQueuedTest, NoWorkloadOrNotSuspendedAddsNothing) {
  model::JobStatus status;
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_EQ(UpdateQueued(status, "PyTorchJob", true, std::nullopt, t0), "");
  EXPECT_EQ(UpdateQueued(status, "PyTorchJob", false, Pending(), t0), "");
  EXPECT_EQ(Queued(status), nullptr);
}

TEST(UpdateQueuedTest, QuotaReservedWaitsForAdmissionChecks) {
  model::JobStatus status;
  ObservedState::Queue q = Pending();
  q.quota_reserved = true;
  UpdateQueued(status, "PyTorchJob", true, q, absl::FromUnixSeconds(1));
  ASSERT_NE(Queued(status), nullptr);
  EXPECT_EQ(Queued(status)->reason(), "PyTorchJobWaitingForAdmission");
}

}  // namespace
}  // namespace coach::reconcile
