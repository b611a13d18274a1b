#include "sdk/cpp/cli/table_printer.h"

#include <gtest/gtest.h>

#include <sstream>

#include "absl/time/clock.h"

namespace coach::cli {
namespace {

TEST(FormatAgeTest, KubectlUnits) {
  EXPECT_EQ(FormatAge(absl::Seconds(0)), "0s");
  EXPECT_EQ(FormatAge(absl::Seconds(5)), "5s");
  EXPECT_EQ(FormatAge(absl::Seconds(59)), "59s");
  EXPECT_EQ(FormatAge(absl::Seconds(60)), "1m");
  EXPECT_EQ(FormatAge(absl::Minutes(3) + absl::Seconds(59)), "3m");
  EXPECT_EQ(FormatAge(absl::Hours(2) + absl::Minutes(5)), "2h");
  EXPECT_EQ(FormatAge(absl::Hours(23) + absl::Minutes(59)), "23h");
  EXPECT_EQ(FormatAge(absl::Hours(24 * 4 + 3)), "4d");
  EXPECT_EQ(FormatAge(absl::Hours(24 * 800)), "2y");
  EXPECT_EQ(FormatAge(-absl::Seconds(3)), "0s");
}

TEST(FormatAgeTest, SinceTimestamp) {
  google::protobuf::Timestamp created;
  EXPECT_EQ(FormatAgeSince(created, absl::Now()), "<unknown>");
  created.set_seconds(1000);
  EXPECT_EQ(FormatAgeSince(created, absl::FromUnixSeconds(1000 + 7200)), "2h");
}

TEST(TablePrinterTest, AlignsColumnsWithoutTrailingSpaces) {
  TablePrinter table({"NAME", "KIND", "AGE"});
  table.AddRow({"mnist", "PyTorchJob", "5s"});
  table.AddRow({"a-much-longer-name", "TFJob"});
  std::ostringstream out;
  table.Print(out);
  EXPECT_EQ(out.str(),
            "NAME                 KIND         AGE\n"
            "mnist                PyTorchJob   5s\n"
            "a-much-longer-name   TFJob\n");
}

TEST(TablePrinterTest, Indent) {
  TablePrinter table({"A", "B"});
  table.AddRow({"1", "2"});
  std::ostringstream out;
  table.Print(out, "  ");
  EXPECT_EQ(out.str(), "  A   B\n  1   2\n");
}

api::v1::TrainingJob RunningJob() {
  api::v1::TrainingJob job;
  job.set_kind(api::v1::PYTORCH_JOB);
  job.mutable_metadata()->set_name("mnist");
  job.mutable_metadata()->set_namespace_("ml");
  job.mutable_metadata()->mutable_creation_timestamp()->set_seconds(1000);
  (*job.mutable_spec()->mutable_replica_specs())["Master"].set_replicas(1);
  (*job.mutable_spec()->mutable_replica_specs())["Worker"].set_replicas(2);
  (*job.mutable_status()->mutable_replica_statuses())["Master"].set_active(1);
  (*job.mutable_status()->mutable_replica_statuses())["Worker"].set_active(1);
  for (const char* type : {"Created", "Running"}) {
    api::v1::JobCondition* condition = job.mutable_status()->add_conditions();
    condition->set_type(type);
    condition->set_status("True");
  }
  return job;
}

TEST(JobTableTest, RowCells) {
  api::v1::TrainingJob job = RunningJob();
  EXPECT_EQ(ReplicaSummary(job), "2/3");
  std::vector<std::string> row = JobTableRow(job, absl::FromUnixSeconds(1000 + 300), false);
  EXPECT_EQ(
      row, (std::vector<std::string>{"mnist", "PyTorchJob", "Running", "2/3", "5m", "-", "-", ""}));
  std::vector<std::string> with_ns = JobTableRow(job, absl::FromUnixSeconds(1045), true);
  EXPECT_EQ(with_ns[0], "ml");
  EXPECT_EQ(with_ns[5], "45s");
  EXPECT_EQ(JobTableHeaders(true)[0], "NAMESPACE");
}

TEST(JobTableTest, ProgressCells) {
  api::v1::TrainingJob job = RunningJob();
  const absl::Time now = absl::FromUnixSeconds(1000 + 300);
  api::v1::JobProgress* progress = job.mutable_status()->mutable_coach()->mutable_progress();
  // Progress without a time: its step, and no age.
  EXPECT_EQ(ProgressStep(job), "0");
  EXPECT_EQ(LastProgressAge(job, now), "-");
  progress->set_step(1200);
  progress->mutable_last_progress_time()->set_seconds(1000 + 288);
  std::vector<std::string> row = JobTableRow(job, now, false);
  EXPECT_EQ(row[5], "1200");
  EXPECT_EQ(row[6], "12s");
  EXPECT_EQ(JobTableHeaders(false)[5], "STEP");
  EXPECT_EQ(JobTableHeaders(false)[6], "LAST-PROGRESS");
  EXPECT_EQ(JobTableHeaders(false).back(), "MESSAGE");
  progress->mutable_last_progress_time()->set_seconds(1000 - 200);
  EXPECT_EQ(LastProgressAge(job, now), "8m");
}

TEST(JobTableTest, MessageSaysWhyAJobWaits) {
  api::v1::TrainingJob job;
  job.set_kind(api::v1::PYTORCH_JOB);
  api::v1::JobCondition* created = job.mutable_status()->add_conditions();
  created->set_type("Created");
  created->set_status("True");
  created->set_message("PyTorchJob mnist is created.");
  EXPECT_EQ(StateMessage(job), "");
  created->set_message("Worker-0: Karpenter: no instance type has enough resources");
  EXPECT_EQ(JobTableRow(job, absl::Now(), false).back(),
            "Worker-0: Karpenter: no instance type has enough resources");
  api::v1::JobCondition* running = job.mutable_status()->add_conditions();
  running->set_type("Running");
  running->set_status("True");
  running->set_message("PyTorchJob mnist is running.");
  EXPECT_EQ(StateMessage(job), "");
}

TEST(JobTableTest, QueuedSaysWhereKueueHoldsTheJob) {
  api::v1::TrainingJob job;
  job.set_kind(api::v1::TRAIN_JOB);
  for (const char* type : {"Created", "Suspended", "Queued"}) {
    api::v1::JobCondition* condition = job.mutable_status()->add_conditions();
    condition->set_type(type);
    condition->set_status("True");
  }
  job.mutable_status()->mutable_conditions(2)->set_message(
      "Waiting for quota: LocalQueue user-queue -> ClusterQueue cluster-queue: insufficient "
      "unused quota for cpu in flavor default-flavor, 1 more needed");
  std::vector<std::string> row = JobTableRow(job, absl::Now(), false);
  EXPECT_EQ(row[2], "Queued");
  EXPECT_EQ(row.back(), job.status().conditions(2).message());
  // Admitted: the job runs, the row says nothing of the queue.
  job.mutable_status()->mutable_conditions(2)->set_status("False");
  job.mutable_status()->mutable_conditions(1)->set_status("False");
  api::v1::JobCondition* running = job.mutable_status()->add_conditions();
  running->set_type("Running");
  running->set_status("True");
  row = JobTableRow(job, absl::Now(), false);
  EXPECT_EQ(row[2], "Running");
  EXPECT_EQ(row.back(), "");
}

TEST(JobTableTest, NoTrailingBlanks) {
  TablePrinter table({"A", "B"});
  table.AddRow({"x", ""});
  std::ostringstream out;
  table.Print(out);
  EXPECT_EQ(out.str(), "A   B\nx\n");
}

TEST(JobTableTest, UnsetReplicaCountIsOneAndNoConditionIsPending) {
  api::v1::TrainingJob job;
  job.set_kind(api::v1::TF_JOB);
  (*job.mutable_spec()->mutable_replica_specs())["Worker"];
  EXPECT_EQ(ReplicaSummary(job), "0/1");
  EXPECT_EQ(JobTableRow(job, absl::Now(), false)[2], "Pending");
  EXPECT_EQ(KindName(api::v1::TrainingJob()), "Unknown");
}

}  // namespace
}  // namespace coach::cli
