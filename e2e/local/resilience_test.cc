// End to end on the local backend: the operator killed with SIGKILL mid-job and restarted
// on the same state directory; ten jobs at once.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "e2e/local/operator_fixture.h"
#include "gtest/gtest.h"
#include "sdk/cpp/job_status.h"

namespace coach::e2e {
namespace {

using api::v1::TrainingJob;

std::vector<std::string> Lines(const std::string& path) {
  return absl::StrSplit(ReadFileOrEmpty(path), '\n', absl::SkipEmpty());
}

class ResilienceTest : public OperatorTest {
 protected:
  void SetUp() override {
    StartOperator();
    work_ = op_->root() + "/work";
  }

  // Writes the "go" file of pod `pod` and waits until its processes (shim included) are
  // gone.
  bool ReleaseAndWaitGone(const std::string& pod) {
    WriteFileOrDie(work_ + "/go-" + pod, "");
    const bool gone = Eventually(
        [&] {
          for (const ProcessInfo& p : op_->Processes()) {
            if (absl::StrContains(p.cmdline, pod)) return false;
          }
          return true;
        },
        kProcessTimeout, kProcessPoll);
    if (!gone) ADD_FAILURE() << pod << " still running:\n" << DescribeProcesses(op_->Processes());
    return gone;
  }

  std::string work_;
};

TEST_F(ResilienceTest, OperatorKill9MidJobThenRestart) {
  // Each replica appends its name to `starts`, then waits for its own "go-<pod>" file.
  const std::string starts = work_ + "/starts";
  const std::string script =
      absl::StrCat("echo $HOSTNAME >> ", starts, "; while [ ! -e ", work_,
                   "/go-$HOSTNAME ]; do sleep 0.2; done; echo finished $HOSTNAME");
  ASSERT_TRUE(op_->client()
                  .CreateJob(BuildOrDie(ShellJob("survivor", script)
                                            .Masters(1)
                                            .Workers(2)
                                            .RestartPolicy("OnFailure")
                                            .BackoffLimit(3)),
                             kNs)
                  .ok());
  ASSERT_TRUE(Eventually([&] { return Lines(starts).size() == 3; }, kProcessTimeout, kProcessPoll))
      << ReadFileOrEmpty(starts);
  ASSERT_TRUE(
      op_->WaitJob("survivor", [](const TrainingJob& j) { return sdk::IsJobRunning(j); }).ok());

  ASSERT_TRUE(op_->Kill9().ok());
  // The replicas outlive the operator; one of them ends while it is down.
  EXPECT_FALSE(op_->Processes().empty());
  ASSERT_TRUE(ReleaseAndWaitGone("survivor-worker-0"));

  ASSERT_TRUE(op_->Restart().ok()) << op_->OperatorLog();
  // Re-adopted: still running, nothing started twice.
  absl::StatusOr<TrainingJob> job = op_->client().GetJob(kNs, "survivor");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_FALSE(sdk::IsJobFinished(*job)) << job->status().ShortDebugString();
  // The other Worker first: the Master ends a PyTorchJob, and the Worker should be seen
  // Succeeded, not still running, when it does.
  ASSERT_TRUE(ReleaseAndWaitGone("survivor-worker-1"));
  WriteFileOrDie(work_ + "/go-survivor-master-0", "");

  absl::StatusOr<TrainingJob> done = op_->WaitJob(
      "survivor", [](const TrainingJob& j) { return sdk::IsJobFinished(j); }, absl::Minutes(3));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(sdk::IsJobSucceeded(*done)) << done->status().ShortDebugString();

  // Exactly one start per replica.
  std::map<std::string, int> per_replica;
  for (const std::string& line : Lines(starts)) ++per_replica[line];
  EXPECT_EQ(per_replica,
            (std::map<std::string, int>{
                {"survivor-master-0", 1}, {"survivor-worker-0", 1}, {"survivor-worker-1", 1}}))
      << ReadFileOrEmpty(starts);
  absl::StatusOr<api::v1::DescribeJobResponse> described =
      op_->client().DescribeJob(kNs, "survivor");
  ASSERT_TRUE(described.ok()) << described.status();
  for (const api::v1::ReplicaState& r : described->replicas()) {
    EXPECT_EQ(r.phase(), "Succeeded") << r.ShortDebugString();
    EXPECT_EQ(r.restarts(), 0) << r.ShortDebugString();
  }
  for (const char* replica : {"master-0", "worker-0", "worker-1"}) {
    absl::StatusOr<std::string> log = op_->Logs("survivor", replica);
    ASSERT_TRUE(log.ok()) << log.status();
    EXPECT_TRUE(absl::StrContains(*log, absl::StrCat("finished survivor-", replica))) << *log;
  }
  const std::vector<ProcessInfo> left = op_->WaitNoProcesses();
  EXPECT_TRUE(left.empty()) << "orphans:\n" << DescribeProcesses(left);
}

TEST_F(ResilienceTest, TenConcurrentJobsGetDistinctPorts) {
  constexpr int kJobs = 10;
  // Every replica holds on until all 20 have started, so the jobs really overlap.
  const std::string started = work_ + "/started";
  const std::string script = absl::StrCat(
      "echo \"addr=$MASTER_ADDR port=$MASTER_PORT rank=$RANK world=$WORLD_SIZE\"; echo x >> ",
      started, "; n=0; while [ $(wc -l < ", started, ") -lt ", 2 * kJobs,
      " ] && [ $n -lt 600 ]; do sleep 0.2; n=$((n+1)); done");
  for (int i = 0; i < kJobs; ++i) {
    const std::string name = absl::StrCat("many-", i);
    absl::StatusOr<TrainingJob> created = op_->client().CreateJob(
        BuildOrDie(ShellJob(name, script).Masters(1).Workers(1).RestartPolicy("Never")), kNs);
    ASSERT_TRUE(created.ok()) << name << ": " << created.status();
  }
  std::map<std::string, std::string> port_of_job;
  for (int i = 0; i < kJobs; ++i) {
    const std::string name = absl::StrCat("many-", i);
    absl::StatusOr<TrainingJob> done = op_->WaitJob(
        name, [](const TrainingJob& j) { return sdk::IsJobFinished(j); }, absl::Minutes(5));
    ASSERT_TRUE(done.ok()) << name << ": " << done.status();
    EXPECT_TRUE(sdk::IsJobSucceeded(*done)) << name << ": " << done->status().ShortDebugString();
    std::string master_port;
    for (const char* replica : {"master-0", "worker-0"}) {
      absl::StatusOr<std::string> log = op_->Logs(name, replica);
      ASSERT_TRUE(log.ok()) << name << "/" << replica << ": " << log.status();
      const size_t at = log->find("port=");
      ASSERT_NE(at, std::string::npos) << *log;
      const std::string port = log->substr(at + 5, log->find(' ', at) - at - 5);
      EXPECT_TRUE(absl::StrContains(*log, "world=2")) << *log;
      if (master_port.empty()) {
        master_port = port;
      } else {
        EXPECT_EQ(port, master_port) << name << ": the worker was given another MASTER_PORT";
      }
    }
    port_of_job[name] = master_port;
  }
  std::set<std::string> distinct;
  std::string all;
  for (const auto& [name, port] : port_of_job) {
    distinct.insert(port);
    absl::StrAppend(&all, name, "=", port, " ");
  }
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kJobs)) << "MASTER_PORT collision: " << all;
  EXPECT_EQ(Lines(started).size(), static_cast<size_t>(2 * kJobs));
  EXPECT_TRUE(op_->WaitNoProcesses().empty());
}

}  // namespace
}  // namespace coach::e2e
