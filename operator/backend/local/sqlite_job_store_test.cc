#include "operator/backend/local/sqlite_job_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "operator/backend/local/fs_util.h"
#include "operator/backend/local/testing/job_store_contract.h"

namespace coach::backend::local {
namespace {

using testing::JobStoreContractTest;
using testing::JobStoreFactory;
using testing::MakeJob;

std::unique_ptr<JobStore> MakeSqlite(const std::string& dir) {
  SqliteJobStore::Options options;
  options.max_events_per_job = 5;
  auto store = SqliteJobStore::Open(dir, options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

INSTANTIATE_TEST_SUITE_P(Sqlite, JobStoreContractTest,
                         ::testing::Values(JobStoreFactory{"sqlite", &MakeSqlite}));

class SqliteJobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = getenv("TEST_TMPDIR");
    dir_ = absl::StrCat(tmp ? tmp : "/tmp", "/sqlite-",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  std::string dir_;
};

TEST_F(SqliteJobStoreTest, SurvivesReopen) {
  std::string uid;
  {
    auto store = SqliteJobStore::Open(dir_);
    ASSERT_TRUE(store.ok()) << store.status();
    auto job = (*store)->Create(MakeJob("ns", "a"));
    ASSERT_TRUE(job.ok());
    uid = job->metadata().uid();
    ReplicaRecord r;
    r.job = {"ns", "a"};
    r.name = "a-worker-0";
    r.process.pid = 77;
    ASSERT_TRUE((*store)->PutReplica(r).ok());
  }
  auto store = SqliteJobStore::Open(dir_);
  ASSERT_TRUE(store.ok());
  auto job = (*store)->Get({"ns", "a"});
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->metadata().uid(), uid);
  EXPECT_EQ((*store)->ListAllReplicas()->at(0).process.pid, 77);
  EXPECT_EQ(*(*store)->SchemaVersion(), SqliteJobStore::kSchemaVersion);
  EXPECT_TRUE(FileSize(dir_ + "/coach.db").ok());
}

TEST_F(SqliteJobStoreTest, CommittedWritesSurviveKill9) {
  // A child process creates jobs and is SIGKILLed without closing anything.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto store = SqliteJobStore::Open(dir_);
    if (!store.ok()) _exit(1);
    for (int i = 0; i < 20; ++i) {
      if (!(*store)->Create(MakeJob("ns", absl::StrCat("j", i))).ok()) _exit(2);
    }
    kill(getpid(), SIGKILL);
    _exit(3);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(st)) << "child exited " << WEXITSTATUS(st);
  auto store = SqliteJobStore::Open(dir_);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->List({})->jobs.size(), 20u);
}

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

TEST_F(SqliteJobStoreTest, UsesWalAndFullSync) {
  auto store = SqliteJobStore::Open(dir_);
  ASSERT_TRUE(store.ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/coach.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "wal");
  sqlite3_finalize(s);
  sqlite3_close(db);
}

TEST_F(SqliteJobStoreTest, RefusesNewerSchema) {
  ASSERT_TRUE(SqliteJobStore::Open(dir_).ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/coach.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "INSERT INTO schema_migrations VALUES (99, 0)", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(SqliteJobStore::Open(dir_).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(SqliteJobStoreTest, InjectedClockSetsCreationTimestamp) {
  SqliteJobStore::Options options;
  options.now = [] { return absl::FromUnixSeconds(1700000000) + absl::Milliseconds(250); };
  auto store = SqliteJobStore::Open(dir_, options);
  ASSERT_TRUE(store.ok());
  auto job = (*store)->Create(MakeJob("ns", "a"));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->metadata().creation_timestamp().seconds(), 1700000000);
  EXPECT_EQ(job->metadata().creation_timestamp().nanos(), 250000000);
}

}  // namespace
}  // namespace coach::backend::local
