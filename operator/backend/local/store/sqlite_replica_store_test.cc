#include "operator/backend/local/store/sqlite_replica_store.h"

#include <gtest/gtest.h>

#include "common/testing/test_dir.h"
#include "operator/backend/local/store/sqlite_job_store.h"
#include "operator/store/testing/test_jobs.h"

namespace coach::backend::local {
namespace {

using store::testing::MakeJob;

std::string TestDir(const std::string& prefix) { return ::coach::testing::FreshTestDir(prefix); }

// The local backend's records (ReplicaStore), on the same sqlite database as the jobs: the
// job store makes the jobs they belong to, store_ is its replicas().
class SqliteReplicaStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SqliteJobStore::Options options;
    options.max_events_per_job = 5;
    auto jobs = SqliteJobStore::Open(TestDir("replicas"), options);
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    jobs_ = std::move(*jobs);
    store_ = jobs_->replicas();
  }
  absl::Status CreateJob(const std::string& name) {
    return jobs_->Create(MakeJob("ns", name)).status();
  }
  std::unique_ptr<SqliteJobStore> jobs_;
  SqliteReplicaStore* store_ = nullptr;
};

TEST_F(SqliteReplicaStoreTest, ObjectsAreKeptPerJobAndGoWithIt) {
  ASSERT_TRUE(CreateJob("a").ok());
  ASSERT_TRUE(CreateJob("b").ok());
  EXPECT_EQ(store_->AddObjects({"ns", "gone"}, {{"Service", "x"}}).code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(
      store_->AddObjects({"ns", "a"}, {{"Service", "a-worker-0"}, {"ConfigMap", "a-c"}}).ok());
  ASSERT_TRUE(store_->AddObjects({"ns", "a"}, {{"Service", "a-worker-0"}}).ok()) << "idempotent";
  ASSERT_TRUE(store_->AddObjects({"ns", "b"}, {{"Service", "b-worker-0"}}).ok());
  using Objects = std::vector<ReplicaStore::ObjectName>;
  EXPECT_EQ(*store_->ListObjects({"ns", "a"}),
            (Objects{{"ConfigMap", "a-c"}, {"Service", "a-worker-0"}}));
  ASSERT_TRUE(store_->RemoveObject({"ns", "a"}, {"ConfigMap", "a-c"}).ok());
  ASSERT_TRUE(store_->RemoveObject({"ns", "a"}, {"ConfigMap", "a-c"}).ok()) << "idempotent";
  EXPECT_EQ(*store_->ListObjects({"ns", "a"}), (Objects{{"Service", "a-worker-0"}}));
  ASSERT_TRUE(jobs_->Delete({"ns", "a"}, std::nullopt).ok());
  EXPECT_TRUE(store_->ListObjects({"ns", "a"})->empty()) << "deleted with the job";
  EXPECT_EQ(*store_->ListObjects({"ns", "b"}), (Objects{{"Service", "b-worker-0"}}));
  ASSERT_TRUE(store_->RemoveObjects({"ns", "b"}).ok());
  EXPECT_TRUE(store_->ListObjects({"ns", "b"})->empty());
}

TEST_F(SqliteReplicaStoreTest, PutReplicasWritesAllOrNone) {
  ASSERT_TRUE(CreateJob("a").ok());
  ReplicaRecord m, w, stray;
  m.job = w.job = {"ns", "a"};
  m.name = "a-master-0";
  w.name = "a-worker-0";
  stray.job = {"ns", "gone"};  // no such job: the whole batch is refused
  stray.name = "gone-worker-0";
  EXPECT_EQ(store_->PutReplicas({m, w, stray}).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->ListReplicas({"ns", "a"})->empty());
  ASSERT_TRUE(store_->PutReplicas({m, w}).ok());
  auto list = store_->ListReplicas({"ns", "a"});
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "a-master-0");
  EXPECT_EQ((*list)[1].name, "a-worker-0");
  EXPECT_TRUE(store_->PutReplicas({}).ok());
}

TEST_F(SqliteReplicaStoreTest, ReplicaRecordsRoundTrip) {
  ASSERT_TRUE(CreateJob("a").ok());
  ASSERT_TRUE(CreateJob("b").ok());
  ReplicaRecord r;
  r.job = {"ns", "a"};
  r.name = "a-worker-1";
  r.replica_type = "Worker";
  r.index = 1;
  r.process = {1234, 1235, 987654321012ull, "/state/replicas/ns/a/a-worker-1"};
  r.log_path = "/state/logs/ns/a/a-worker-1.log";
  r.phase = model::PodPhase::kFailed;
  r.exit_code = 3;
  r.restart_count = 2;
  r.ports = {{"master", 40001}, {"rdzv", 40002}};
  r.gpus = {2, 3};
  r.started_at = absl::FromUnixMicros(1700000000123456);
  r.finished_at = absl::FromUnixMicros(1700000005000000);
  r.message = "exit 3";
  ASSERT_TRUE(store_->PutReplica(r).ok());
  ReplicaRecord r0;
  r0.job = {"ns", "a"};
  r0.name = "a-worker-0";
  ASSERT_TRUE(store_->PutReplica(r0).ok());
  ReplicaRecord rb;
  rb.job = {"ns", "b"};
  rb.name = "b-worker-0";
  ASSERT_TRUE(store_->PutReplica(rb).ok());

  auto list = store_->ListReplicas({"ns", "a"});
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "a-worker-0");
  EXPECT_FALSE((*list)[0].exit_code.has_value());
  EXPECT_EQ((*list)[0].started_at, absl::InfinitePast());
  const ReplicaRecord& got = (*list)[1];
  EXPECT_EQ(got.job, r.job);
  EXPECT_EQ(got.replica_type, "Worker");
  EXPECT_EQ(got.index, 1);
  EXPECT_EQ(got.process, r.process);
  EXPECT_EQ(got.log_path, r.log_path);
  EXPECT_EQ(got.phase, model::PodPhase::kFailed);
  EXPECT_EQ(got.exit_code, 3);
  EXPECT_EQ(got.restart_count, 2);
  EXPECT_EQ(got.ports, r.ports);
  EXPECT_EQ(got.gpus, r.gpus);
  EXPECT_EQ(got.started_at, r.started_at);
  EXPECT_EQ(got.finished_at, r.finished_at);
  EXPECT_EQ(got.message, "exit 3");

  // Put replaces.
  r.restart_count = 3;
  r.exit_code.reset();
  ASSERT_TRUE(store_->PutReplica(r).ok());
  list = store_->ListReplicas({"ns", "a"});
  EXPECT_EQ((*list)[1].restart_count, 3);
  EXPECT_FALSE((*list)[1].exit_code.has_value());

  EXPECT_EQ(store_->ListAllReplicas()->size(), 3u);
  ASSERT_TRUE(store_->DeleteReplica({"ns", "a"}, "a-worker-0").ok());
  EXPECT_EQ(store_->DeleteReplica({"ns", "a"}, "a-worker-0").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->ListReplicas({"ns", "a"})->size(), 1u);

  ReplicaRecord orphan;
  orphan.job = {"ns", "nojob"};
  orphan.name = "x";
  EXPECT_EQ(store_->PutReplica(orphan).code(), absl::StatusCode::kNotFound);
}

TEST_F(SqliteReplicaStoreTest, PortReservationsAreExclusiveAndAtomic) {
  ASSERT_TRUE(CreateJob("a").ok());
  ASSERT_TRUE(CreateJob("b").ok());
  ASSERT_TRUE(store_
                  ->ReservePorts(
                      {{41000, {"ns", "a"}, "a-0", "master"}, {41001, {"ns", "a"}, "a-0", "rdzv"}})
                  .ok());
  // 41002 is free but 41001 is taken: nothing is reserved.
  EXPECT_EQ(store_
                ->ReservePorts(
                    {{41002, {"ns", "b"}, "b-0", "master"}, {41001, {"ns", "b"}, "b-0", "rdzv"}})
                .code(),
            absl::StatusCode::kAlreadyExists);
  auto all = store_->ListPortReservations();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].port, 41000);
  EXPECT_EQ((*all)[1].port_name, "rdzv");
  EXPECT_EQ((*all)[1].job, (JobKey{"ns", "a"}));
  EXPECT_EQ(store_->ReservePorts({{41005, {"ns", "none"}, "x", "m"}}).code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(store_->ReleasePorts({"ns", "a"}).ok());
  EXPECT_TRUE(store_->ListPortReservations()->empty());
  EXPECT_TRUE(store_->ReservePorts({{41001, {"ns", "b"}, "b-0", "rdzv"}}).ok());
}

// The per-job and per-port looks the backend makes on every pass and admission, and the
// poller's list of running replicas: answers limited to what they ask about.
TEST_F(SqliteReplicaStoreTest, NarrowLookups) {
  ASSERT_TRUE(CreateJob("a").ok());
  ASSERT_TRUE(CreateJob("b").ok());
  ASSERT_TRUE(store_
                  ->ReservePorts({{42000, {"ns", "a"}, "a-0", "master"},
                                  {42001, {"ns", "b"}, "b-0", "master"},
                                  {42002, {"ns", "b"}, "b-1", "master"}})
                  .ok());
  auto of_b = store_->ListPortReservationsOf({"ns", "b"});
  ASSERT_TRUE(of_b.ok());
  ASSERT_EQ(of_b->size(), 2u);
  EXPECT_EQ((*of_b)[0].port, 42001);
  EXPECT_EQ((*of_b)[1].replica, "b-1");
  EXPECT_TRUE(store_->ListPortReservationsOf({"ns", "none"})->empty());
  EXPECT_TRUE(*store_->IsPortReserved(42002));
  EXPECT_FALSE(*store_->IsPortReserved(42003));

  ReplicaRecord r;
  r.job = {"ns", "a"};
  for (auto [name, phase] :
       {std::pair{"a-0", model::PodPhase::kPending}, std::pair{"a-1", model::PodPhase::kRunning},
        std::pair{"a-2", model::PodPhase::kSucceeded}}) {
    r.name = name;
    r.phase = phase;
    ASSERT_TRUE(store_->PutReplica(r).ok());
  }
  r.job = {"ns", "b"};
  r.name = "b-0";
  r.phase = model::PodPhase::kRunning;
  r.process.pid = 99;  // a record with a process: committed without a sync of its own
  ASSERT_TRUE(store_->PutReplica(r).ok());
  auto running = store_->ListRunningReplicas();
  ASSERT_TRUE(running.ok());
  ASSERT_EQ(running->size(), 2u);
  EXPECT_EQ((*running)[0].name, "a-1");
  EXPECT_EQ((*running)[1].name, "b-0");
  EXPECT_EQ((*running)[1].process.pid, 99);
  EXPECT_EQ(store_->ListAllReplicas()->size(), 4u);
}

}  // namespace
}  // namespace coach::backend::local
