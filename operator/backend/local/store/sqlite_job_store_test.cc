#include "operator/backend/local/store/sqlite_job_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "absl/time/clock.h"
#include "common/testing/fake_clock.h"
#include "common/testing/test_dir.h"
#include "operator/store/testing/job_store_contract.h"
#include "operator/store/testing/test_jobs.h"

namespace coach::backend::local {
namespace {

using store::testing::MakeJob;

std::unique_ptr<SqliteJobStore> MakeSqlite(const std::string& dir) {
  SqliteJobStore::Options options;
  options.max_events_per_job = 5;
  auto store = SqliteJobStore::Open(dir, options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

std::string TestDir(const std::string& prefix) { return ::coach::testing::FreshTestDir(prefix); }

class SqliteContractTest : public store::testing::JobStoreContractTest {
  std::unique_ptr<store::JobStore> Init() override { return MakeSqlite(TestDir("contract")); }
};
COACH_JOB_STORE_CONTRACT_TESTS(SqliteContractTest)

class SqliteJobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TestDir("jobs");
    store_ = MakeSqlite(dir_);
    ASSERT_NE(store_, nullptr);
  }
  std::string dir_;
  std::unique_ptr<SqliteJobStore> store_;
};

TEST_F(SqliteJobStoreTest, TwoConnectionsSeeEachOtherAndConflict) {
  auto a = SqliteJobStore::Open(dir_);
  auto b = SqliteJobStore::Open(dir_);
  ASSERT_TRUE(a.ok() && b.ok());
  auto job = (*a)->Create(MakeJob("ns", "a"));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ((*b)->Create(MakeJob("ns", "a")).status().code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE((*b)->Update(*job).ok());
  EXPECT_EQ((*a)->Update(*job).status().code(), absl::StatusCode::kAborted);
}

TEST_F(SqliteJobStoreTest, InjectedClockSetsCreationTimestamp) {
  SqliteJobStore::Options options;
  FakeClock clock(absl::FromUnixSeconds(1700000000) + absl::Milliseconds(250));
  options.clock = &clock;
  auto store = SqliteJobStore::Open(TestDir("clock"), options);
  ASSERT_TRUE(store.ok());
  auto job = (*store)->Create(MakeJob("ns", "a"));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->metadata().creation_timestamp().seconds(), 1700000000);
  EXPECT_EQ(job->metadata().creation_timestamp().nanos(), 250000000);
}

// Deleting a job deletes its replica store records (replicas(), on the same database) in the
// same transaction.
TEST_F(SqliteJobStoreTest, DeleteCascadesAndChecksVersion) {
  ReplicaStore* replicas = store_->replicas();
  auto job = store_->Create(MakeJob("ns", "a"));
  ASSERT_TRUE(job.ok());
  ReplicaRecord r;
  r.job = {"ns", "a"};
  r.name = "a-worker-0";
  ASSERT_TRUE(replicas->PutReplica(r).ok());
  ASSERT_TRUE(store_->AppendEvent({"ns", "a"}, {"Normal", "Created", "m", absl::Now()}).ok());
  ASSERT_TRUE(replicas->ReservePorts({{45001, {"ns", "a"}, "a-worker-0", "master"}}).ok());

  EXPECT_EQ(store_->Delete({"ns", "a"}, std::string("7")).code(), absl::StatusCode::kAborted);
  ASSERT_TRUE(store_->Delete({"ns", "a"}, std::string("1")).ok());
  EXPECT_EQ(store_->Get({"ns", "a"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Delete({"ns", "a"}, std::nullopt).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(replicas->ListReplicas({"ns", "a"})->empty());
  EXPECT_TRUE(store_->ListEvents({"ns", "a"})->empty());
  EXPECT_TRUE(replicas->ListPortReservations()->empty());
  // The name can be reused, as a new job.
  auto again = store_->Create(MakeJob("ns", "a"));
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->metadata().uid(), job->metadata().uid());
  EXPECT_TRUE(replicas->ListReplicas({"ns", "a"})->empty());
}

// A Delete that fails midway (here: the second of the job's replica records cannot be
// deleted, by a trigger another connection installed) leaves the job and every record of it;
// once it can succeed, all of them are gone together.
TEST_F(SqliteJobStoreTest, DeletingAJobAndItsReplicasIsAtomic) {
  ReplicaStore* replicas = store_->replicas();
  ASSERT_TRUE(store_->Create(MakeJob("ns", "a")).ok());
  ASSERT_TRUE(store_->Create(MakeJob("ns", "b")).ok());
  ReplicaRecord r;
  r.job = {"ns", "a"};
  for (const char* name : {"a-worker-0", "a-worker-1", "a-worker-2"}) {
    r.name = name;
    ASSERT_TRUE(replicas->PutReplica(r).ok());
  }
  r.job = {"ns", "b"};
  r.name = "b-worker-0";
  ASSERT_TRUE(replicas->PutReplica(r).ok());
  ASSERT_TRUE(replicas->ReservePorts({{46001, {"ns", "a"}, "a-worker-0", "master"}}).ok());
  ASSERT_TRUE(replicas->AddObjects({"ns", "a"}, {{"Service", "a-worker-0"}}).ok());
  ASSERT_TRUE(store_->AppendEvent({"ns", "a"}, {"Normal", "Created", "m", absl::Now()}).ok());

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/coach.db").c_str(), &db), SQLITE_OK);
  auto exec = [db](const char* sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << (err != nullptr ? err : "");
    sqlite3_free(err);
  };
  exec(
      "CREATE TRIGGER fail_midway BEFORE DELETE ON replicas WHEN OLD.name = 'a-worker-1' "
      "BEGIN SELECT RAISE(ABORT, 'injected failure'); END");

  absl::Status failed = store_->Delete({"ns", "a"}, std::nullopt);
  EXPECT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("injected failure"), std::string::npos) << failed;
  EXPECT_TRUE(store_->Get({"ns", "a"}).ok()) << "the job is kept";
  auto kept = replicas->ListReplicas({"ns", "a"});
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 3u) << "every replica record is kept, a-worker-0 too";
  EXPECT_EQ((*kept)[0].name, "a-worker-0");
  EXPECT_EQ(replicas->ListPortReservationsOf({"ns", "a"})->size(), 1u);
  EXPECT_EQ(replicas->ListObjects({"ns", "a"})->size(), 1u);
  EXPECT_EQ(store_->ListEvents({"ns", "a"})->size(), 1u);
  // The store still writes after the failed transaction (it was rolled back, not left open).
  r.job = {"ns", "a"};
  r.name = "a-worker-3";
  ASSERT_TRUE(replicas->PutReplica(r).ok());

  exec("DROP TRIGGER fail_midway");
  sqlite3_close(db);
  ASSERT_TRUE(store_->Delete({"ns", "a"}, std::nullopt).ok());
  EXPECT_EQ(store_->Get({"ns", "a"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(replicas->ListReplicas({"ns", "a"})->empty());
  EXPECT_TRUE(replicas->ListPortReservationsOf({"ns", "a"})->empty());
  EXPECT_TRUE(replicas->ListObjects({"ns", "a"})->empty());
  EXPECT_TRUE(store_->ListEvents({"ns", "a"})->empty());
  EXPECT_EQ(replicas->ListReplicas({"ns", "b"})->size(), 1u) << "another job's records stay";
}

}  // namespace
}  // namespace coach::backend::local
