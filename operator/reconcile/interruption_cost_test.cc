#include "operator/reconcile/interruption_cost.h"

#include <gtest/gtest.h>

#include "operator/reconcile/conditions.h"

namespace coach::reconcile {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);

model::JobStatus Interrupted() {
  model::JobStatus status;
  api::v1::JobAttempt& first = *status.mutable_coach()->add_attempts();
  first.set_attempt(0);
  *first.mutable_end_time() = ToTimestamp(kT0);
  first.set_reason("Disrupted");
  first.set_last_step(140);
  (*first.mutable_nodes())["worker-0"] = "spot-1";
  api::v1::JobAttempt& second = *status.mutable_coach()->add_attempts();
  second.set_attempt(1);
  (*second.mutable_nodes())["master-0"] = "od-2";
  (*second.mutable_nodes())["worker-0"] = "od-1";
  (*second.mutable_nodes())["worker-1"] = "od-1";
  return status;
}

TEST(InterruptionCostTest, TheStepsLostTheTimeBackAndWhereItRunsNow) {
  model::JobStatus status = Interrupted();
  EXPECT_FALSE(InterruptionCost(status, 1)) << "nothing until the next attempt resumed";
  EXPECT_FALSE(StepsLostKnown(status, 1));
  status.mutable_coach()->mutable_attempts(0)->set_steps_lost(0);
  *status.mutable_coach()->mutable_attempts(1)->mutable_running_time() =
      ToTimestamp(kT0 + absl::Seconds(42));
  EXPECT_TRUE(StepsLostKnown(status, 1));
  EXPECT_EQ(InterruptionCost(status, 1).value_or(""),
            "attempt 0 ended (Disrupted): 0 step(s) lost (it reached step 140, attempt 1 resumed "
            "at 140); every replica running again 42s after it ended; now on od-1, od-2");
}

TEST(InterruptionCostTest, ACountedRestartIsNoInterruption) {
  model::JobStatus status = Interrupted();
  status.mutable_coach()->mutable_attempts(0)->set_steps_lost(12);
  status.mutable_coach()->mutable_attempts(0)->set_counted(true);
  EXPECT_FALSE(InterruptionCost(status, 1));
  status.mutable_coach()->mutable_attempts(0)->set_counted(false);
  EXPECT_EQ(InterruptionCost(status, 1).value_or(""),
            "attempt 0 ended (Disrupted): 12 step(s) lost (it reached step 140, attempt 1 resumed "
            "at 128); now on od-1, od-2");
  EXPECT_FALSE(InterruptionCost(status, 0));
}

}  // namespace
}  // namespace coach::reconcile
