#include "sdk/cpp/cli/progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace coach::cli {
namespace {

api::v1::TrainingJob Job(int active, int succeeded, const char* state) {
  api::v1::TrainingJob job;
  job.mutable_metadata()->set_namespace_("default");
  job.mutable_metadata()->set_name("mnist");
  (*job.mutable_spec()->mutable_replica_specs())["Master"].set_replicas(1);
  (*job.mutable_spec()->mutable_replica_specs())["Worker"].set_replicas(2);
  (*job.mutable_status()->mutable_replica_statuses())["Worker"].set_active(active);
  (*job.mutable_status()->mutable_replica_statuses())["Master"].set_succeeded(succeeded);
  if (state != nullptr) {
    api::v1::JobCondition* condition = job.mutable_status()->add_conditions();
    condition->set_type(state);
    condition->set_status("True");
  }
  return job;
}

TEST(ProgressLineTest, CountsStartingRunningDone) {
  EXPECT_EQ(ProgressLine(Job(0, 0, nullptr)),
            "default/mnist Pending: 3 starting, 0 running, 0 succeeded, 0 failed (of 3)");
  EXPECT_EQ(ProgressLine(Job(2, 0, "Running")),
            "default/mnist Running: 1 starting, 2 running, 0 succeeded, 0 failed (of 3)");
  EXPECT_EQ(ProgressLine(Job(0, 1, "Succeeded")),
            "default/mnist Succeeded: 2 starting, 0 running, 1 succeeded, 0 failed (of 3)");
}

TEST(ProgressReporterTest, PlainPrintsOneLinePerChange) {
  std::ostringstream out;
  ProgressReporter progress(out, /*interactive=*/false);
  progress.Update(Job(0, 0, "Created"));
  progress.Update(Job(0, 0, "Created"));
  progress.Update(Job(2, 0, "Running"));
  progress.Finish();
  EXPECT_EQ(out.str(),
            "default/mnist Created: 3 starting, 0 running, 0 succeeded, 0 failed (of 3)\n"
            "default/mnist Running: 1 starting, 2 running, 0 succeeded, 0 failed (of 3)\n");
}

TEST(ProgressReporterTest, InteractiveRewritesOneLine) {
  std::ostringstream out;
  ProgressReporter progress(out, /*interactive=*/true);
  progress.Update(Job(0, 0, "Created"));
  progress.Update(Job(2, 0, "Running"));
  progress.Finish();
  EXPECT_EQ(out.str(),
            "\r\033[Kdefault/mnist Created: 3 starting, 0 running, 0 succeeded, 0 failed (of 3)"
            "\r\033[Kdefault/mnist Running: 1 starting, 2 running, 0 succeeded, 0 failed (of 3)"
            "\n");
}

TEST(ProgressReporterTest, FinishWithoutUpdatesPrintsNothing) {
  std::ostringstream out;
  ProgressReporter progress(out, /*interactive=*/true);
  progress.Finish();
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace coach::cli
