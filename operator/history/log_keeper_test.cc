#include "operator/history/log_keeper.h"

#include "absl/strings/match.h"
#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"
#include "integrations/s3/testing/fake_object_store.h"
#include "operator/core/testing/fake_backend.h"
#include "operator/metrics/registry.h"
#include "operator/reconcile/conditions.h"

namespace coach::history {
namespace {

using core::testing::FakeBackend;

model::Job Job(int attempt) {
  model::Job job;
  job.mutable_metadata()->set_namespace_("ns");
  job.mutable_metadata()->set_name("ddp");
  job.mutable_metadata()->set_uid("uid-1");
  job.mutable_status()->mutable_coach()->set_attempt(attempt);
  return job;
}

model::ObservedPod Pod(const std::string& name, int attempt) {
  model::ObservedPod pod;
  pod.name = name;
  pod.node = "node-a";
  pod.attempt = attempt;
  return pod;
}

class FakeMlflow : public MlflowLogSink {
 public:
  bool Tracks(const model::Job&) override { return true; }
  void KeepLogs(const model::Job&, int attempt, std::map<std::string, std::string> logs) override {
    for (auto& [replica, text] : logs) kept[KeptLogName(attempt, replica)] = text;
  }
  absl::StatusOr<std::string> ReadLog(const model::Job&, int attempt,
                                      const std::string& replica) override {
    auto it = kept.find(KeptLogName(attempt, replica));
    if (it == kept.end()) return absl::NotFoundError("no artifact");
    return it->second;
  }
  absl::StatusOr<std::vector<std::string>> ReplicasOf(const model::Job&, int attempt) override {
    std::vector<std::string> replicas;
    const std::string prefix = KeptLogName(attempt, "");
    for (const auto& [name, text] : kept) {
      if (absl::StartsWith(name, prefix)) replicas.push_back(name.substr(prefix.size()));
    }
    return replicas;
  }
  void KeepRecord(api::v1::JobHistory record, bool read_logs) override {
    records.push_back(std::move(record));
    read_logs_asked.push_back(read_logs);
  }
  absl::StatusOr<std::vector<api::v1::JobHistory>> ListDeleted(const std::string& ns,
                                                               const std::string&, int,
                                                               bool* truncated) override {
    *truncated = false;
    std::vector<api::v1::JobHistory> out;
    for (const auto& r : records) {
      if (ns.empty() || r.job().metadata().namespace_() == ns) out.push_back(r);
    }
    return out;
  }
  absl::StatusOr<api::v1::JobHistory> DeletedRecord(const std::string&, const std::string&,
                                                    const std::string& uid) override {
    for (const auto& r : records) {
      if (r.job().metadata().uid() == uid) return r;
    }
    return absl::NotFoundError("no run keeps it");
  }
  std::map<std::string, std::string> kept;
  std::vector<api::v1::JobHistory> records;
  std::vector<bool> read_logs_asked;
};

class LogKeeperTest : public ::testing::Test {
 protected:
  LogKeeperOptions Options() {
    LogKeeperOptions options;
    options.max_log_bytes = 8;
    options.backoff_base = absl::Milliseconds(1);
    return options;
  }
  FakeClock clock_;
  FakeBackend backend_;
  s3::testing::FakeObjectStore objects_;
  HistoryStore store_{&objects_, ""};
  metrics::Registry registry_;
};

TEST_F(LogKeeperTest, PodsDeletedInARestartAreKeptUnderTheirAttemptCutToTheirEnd) {
  LogKeeper keeper(Options(), &backend_, &store_, nullptr, Clock::Real(), &registry_);
  keeper.Start();
  backend_.SetLog("worker-0", "0123456789end\n");
  backend_.SetLog("master-0", "master\n");
  keeper.PodsDeleting(Job(1), {Pod("ddp-worker-0", 0), Pod("ddp-master-0", 0)});
  ASSERT_TRUE(keeper.WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(*store_.GetLog({"ns", "ddp", "uid-1"}, 0, "worker-0", 100), "6789end\n");
  auto read = keeper.Read(Job(1), 0, "");
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].replica, "master-0");
  EXPECT_EQ((*read)[0].source, "kept/store");
  EXPECT_TRUE(absl::IsNotFound(keeper.Read(Job(1), 1, "").status()));
  EXPECT_NE(registry_.Render().find("coach_kept_logs_total{result=\"kept\"} 2"), std::string::npos);
}

TEST_F(LogKeeperTest, ATrackedJobsLogsGoToItsRunToo) {
  FakeMlflow mlflow;
  LogKeeper keeper(Options(), &backend_, nullptr, &mlflow, Clock::Real(), nullptr);
  backend_.SetLog("worker-0", "w\n");
  keeper.PodsDeleting(Job(1), {Pod("ddp-worker-0", 0)});
  EXPECT_EQ(mlflow.kept["attempt-0/worker-0"], "w\n");
  auto read = keeper.Read(Job(1), 0, "worker-0");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)[0].source, "kept/mlflow");
  // Every replica: those the run lists.
  auto all = keeper.Read(Job(1), 0, "");
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].replica, "worker-0");
  EXPECT_TRUE(absl::IsNotFound(keeper.Read(Job(1), 1, "").status()));
}

// With MLflow and no store, the run keeps the deleted job's record: asked once, however the
// deletion is seen, with the logs read for it only when nobody read them at the deletion.
TEST_F(LogKeeperTest, WithoutAStoreATrackedJobsRecordGoesToItsRun) {
  FakeMlflow mlflow;
  LogKeeper keeper(Options(), &backend_, nullptr, &mlflow, &clock_, nullptr);
  keeper.JobDeleting(Job(3));
  keeper.JobGone(Job(3));
  ASSERT_EQ(mlflow.records.size(), 1u);
  EXPECT_FALSE(mlflow.read_logs_asked[0]);
  EXPECT_EQ(mlflow.records[0].deleted_by(), "deleted");
  EXPECT_EQ(reconcile::FromTimestamp(mlflow.records[0].deleted_time()), clock_.Now());
  model::Job other = Job(0);
  other.mutable_metadata()->set_uid("uid-2");
  keeper.JobGone(other);
  ASSERT_EQ(mlflow.records.size(), 2u);
  EXPECT_TRUE(mlflow.read_logs_asked[1]);
  bool truncated = true;
  auto listed = keeper.ListDeleted("ns", "", 10, &truncated);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->size(), 2u);
  auto record = keeper.DeletedRecord("ns", "ddp", "uid-2");
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->job().metadata().uid(), "uid-2");
}

TEST_F(LogKeeperTest, WithNeitherStoreNorMlflowNoHistoryIsKept) {
  LogKeeper keeper(Options(), &backend_, nullptr, nullptr, &clock_, nullptr);
  keeper.JobDeleting(Job(0));
  bool truncated = false;
  EXPECT_TRUE(absl::IsFailedPrecondition(keeper.ListDeleted("", "", 10, &truncated).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(keeper.DeletedRecord("ns", "ddp", "uid-1").status()));
}

TEST_F(LogKeeperTest, ADeletedJobLeavesItsRecordAndLastLogs) {
  LogKeeper keeper(Options(), &backend_, &store_, nullptr, &clock_, nullptr);
  keeper.Start();
  model::Job job = Job(2);
  job.mutable_spec()->mutable_run_policy()->set_ttl_seconds_after_finished(5);
  *job.mutable_status()->mutable_completion_time() =
      reconcile::ToTimestamp(clock_.Now() - absl::Seconds(6));
  backend_.SetPod("ns", "ddp", Pod("worker-0", 2));
  backend_.SetLog("worker-0", "last\n");
  keeper.JobDeleting(job);
  ASSERT_TRUE(keeper.WaitIdle(absl::Seconds(10)));
  bool truncated = true;
  auto listed = keeper.ListDeleted("ns", "", 10, &truncated);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_FALSE(truncated);
  EXPECT_EQ((*listed)[0].deleted_by(), "ttl");
  EXPECT_EQ((*listed)[0].logs(0), "attempt-2/worker-0");
  auto record = keeper.DeletedRecord("ns", "ddp", "uid-1");
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->job().status().coach().attempt(), 2);
}

TEST_F(LogKeeperTest, AJobGoneFromTheStoreIsRecordedOnceOffTheCallersThread) {
  LogKeeper keeper(Options(), &backend_, &store_, nullptr, &clock_, nullptr);
  keeper.Start();
  backend_.SetPod("ns", "ddp", Pod("worker-0", 0));
  backend_.SetLog("worker-0", "gone\n");
  keeper.JobGone(Job(0));
  ASSERT_TRUE(keeper.WaitIdle(absl::Seconds(10)));
  auto record = keeper.DeletedRecord("ns", "ddp", "uid-1");
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->deleted_by(), "deleted");
  EXPECT_EQ(*store_.GetLog({"ns", "ddp", "uid-1"}, 0, "worker-0", 100), "gone\n");
  // The watch's deletion after JobService's: nothing is read or written again.
  objects_.ClearCalls();
  keeper.JobDeleting(Job(0));
  keeper.JobGone(Job(0));
  ASSERT_TRUE(keeper.WaitIdle(absl::Seconds(10)));
  EXPECT_TRUE(objects_.calls().empty());
}

TEST_F(LogKeeperTest, AFinishedJobsLastAttemptIsKeptOnceOffThePass) {
  LogKeeper keeper(Options(), &backend_, &store_, nullptr, Clock::Real(), nullptr);
  model::Job job = Job(1);
  api::v1::JobCondition* done = job.mutable_status()->add_conditions();
  done->set_type("Succeeded");
  done->set_status("True");
  backend_.SetPod("ns", "ddp", Pod("worker-0", 1));
  backend_.SetLog("worker-0", "done\n");
  // Not started: the pass only queues.
  keeper.JobSeen(job);
  EXPECT_TRUE(objects_.calls().empty());
  keeper.Start();
  ASSERT_TRUE(keeper.WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(*store_.GetLog({"ns", "ddp", "uid-1"}, 1, "worker-0", 100), "done\n");
  objects_.ClearCalls();
  keeper.JobSeen(job);
  ASSERT_TRUE(keeper.WaitIdle(absl::Seconds(10)));
  EXPECT_TRUE(objects_.calls().empty());
}

TEST_F(LogKeeperTest, AStoreThatIsDownIsRetriedThenTheLogIsCountedAsFailed) {
  LogKeeperOptions options = Options();
  options.max_write_tries = 2;
  LogKeeper keeper(options, &backend_, &store_, nullptr, Clock::Real(), &registry_);
  keeper.Start();
  objects_.InjectError(s3::testing::FakeObjectStore::Op::kPut, absl::UnavailableError("503"));
  backend_.SetLog("worker-0", "a\n");
  keeper.PodsDeleting(Job(1), {Pod("ddp-worker-0", 0)});
  ASSERT_TRUE(keeper.WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(*store_.GetLog({"ns", "ddp", "uid-1"}, 0, "worker-0", 100), "a\n");

  objects_.FailAll(absl::UnavailableError("down"));
  keeper.PodsDeleting(Job(1), {Pod("ddp-worker-0", 1)});
  ASSERT_TRUE(keeper.WaitIdle(absl::Seconds(10)));
  EXPECT_NE(registry_.Render().find("coach_kept_logs_total{result=\"failed\"} 1"),
            std::string::npos);
}

TEST_F(LogKeeperTest, AReaderWaitsForRoomRatherThanDropping) {
  LogKeeperOptions options = Options();
  options.max_pending_bytes = 10;
  options.writers = 1;
  LogKeeper keeper(options, &backend_, &store_, nullptr, Clock::Real(), &registry_);
  keeper.Start();
  for (int i = 0; i < 6; ++i) backend_.SetLog("worker-" + std::to_string(i), "12345678");
  std::vector<model::ObservedPod> pods;
  for (int i = 0; i < 6; ++i) pods.push_back(Pod("ddp-worker-" + std::to_string(i), 0));
  keeper.PodsDeleting(Job(1), pods);
  ASSERT_TRUE(keeper.WaitIdle(absl::Seconds(10)));
  EXPECT_EQ(store_.ReplicasOf({"ns", "ddp", "uid-1"}, 0, 10)->size(), 6u);
  EXPECT_EQ(registry_.Render().find("result=\"dropped\""), std::string::npos);
}

TEST_F(LogKeeperTest, BeyondThePendingBoundALogIsDropped) {
  LogKeeperOptions options = Options();
  options.max_pending_bytes = 10;
  LogKeeper keeper(options, &backend_, &store_, nullptr, Clock::Real(), &registry_);
  // Not started: nothing is written, so the queue fills.
  backend_.SetLog("worker-0", "12345678");
  backend_.SetLog("worker-1", "12345678");
  keeper.PodsDeleting(Job(1), {Pod("ddp-worker-0", 0), Pod("ddp-worker-1", 0)});
  EXPECT_NE(registry_.Render().find("coach_kept_logs_total{result=\"dropped\"} 1"),
            std::string::npos);
}

}  // namespace
}  // namespace coach::history
