#include "operator/backend/local/store/sqlite_database.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "common/testing/test_dir.h"
#include "operator/backend/local/fs_util.h"
#include "operator/backend/local/store/sqlite_job_store.h"
#include "operator/store/testing/test_jobs.h"

namespace coach::backend::local {
namespace {

using store::testing::MakeJob;

class SqliteDatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::coach::testing::FreshTestDir(
        absl::StrCat("sqlite-", ::testing::UnitTest::GetInstance()->current_test_info()->name()));
  }
  std::string dir_;
};

// A database truncated to 0 bytes (or deleted) beside replicas of an earlier run is refused, not
// taken as an empty store (jobs would vanish and a resubmit would run twice).
TEST_F(SqliteDatabaseTest, AnEmptyOrMissingDatabaseBesideExistingStateIsRefused) {
  {
    auto store = SqliteJobStore::Open(dir_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->Create(MakeJob("ns", "a")).ok());
  }
  ASSERT_TRUE(MakeDirs(dir_ + "/replicas/ns/a").ok());
  ASSERT_EQ(::truncate((dir_ + "/coach.db").c_str(), 0), 0);
  ::unlink((dir_ + "/coach.db-wal").c_str());
  auto refused = SqliteDatabase::Open(dir_);
  ASSERT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("is empty but"), std::string::npos) << refused.status();
  ASSERT_EQ(::unlink((dir_ + "/coach.db").c_str()), 0);
  refused = SqliteDatabase::Open(dir_);
  ASSERT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("is missing but"), std::string::npos);
  // A fresh state directory (no replicas) opens as an empty store.
  ASSERT_EQ(::rmdir((dir_ + "/replicas/ns/a").c_str()), 0);
  ASSERT_EQ(::rmdir((dir_ + "/replicas/ns").c_str()), 0);
  EXPECT_TRUE(SqliteDatabase::Open(dir_).ok());
}

TEST_F(SqliteDatabaseTest, TheStateDirectoryIsPrivate) {
  ASSERT_TRUE(MakeDirs(dir_).ok());
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  ASSERT_TRUE(SqliteDatabase::Open(dir_).ok());
  struct stat st {};
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(SqliteDatabaseTest, SurvivesReopen) {
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
    ASSERT_TRUE((*store)->replicas()->PutReplica(r).ok());
  }
  auto store = SqliteJobStore::Open(dir_);
  ASSERT_TRUE(store.ok());
  auto job = (*store)->Get({"ns", "a"});
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->metadata().uid(), uid);
  EXPECT_EQ((*store)->replicas()->ListAllReplicas()->at(0).process.pid, 77);
  EXPECT_EQ(*(*store)->database().SchemaVersion(), SqliteDatabase::kSchemaVersion);
  EXPECT_TRUE(FileSize(dir_ + "/coach.db").ok());
}

// A store written before replicas had an attempt (schema 1) opens with its replicas at attempt
// 0, and keeps the attempts written after.
TEST_F(SqliteDatabaseTest, MigratesAVersionOneStore) {
  {
    auto store = SqliteJobStore::Open(dir_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->Create(MakeJob("ns", "a")).ok());
    ReplicaRecord r;
    r.job = {"ns", "a"};
    r.name = "a-worker-0";
    r.process.pid = 77;
    r.attempt = 5;
    ASSERT_TRUE((*store)->replicas()->PutReplica(r).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/coach.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "ALTER TABLE replicas DROP COLUMN attempt; "
                         "DELETE FROM schema_migrations WHERE version > 1",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = SqliteJobStore::Open(dir_);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(*(*store)->database().SchemaVersion(), SqliteDatabase::kSchemaVersion);
  auto replicas = (*store)->replicas()->ListAllReplicas();
  ASSERT_TRUE(replicas.ok()) << replicas.status();
  ASSERT_EQ(replicas->size(), 1u);
  EXPECT_EQ(replicas->at(0).process.pid, 77);
  EXPECT_EQ(replicas->at(0).attempt, 0);
  ReplicaRecord r = replicas->at(0);
  r.attempt = 3;
  ASSERT_TRUE((*store)->replicas()->PutReplica(r).ok());
  EXPECT_EQ((*store)->replicas()->ListAllReplicas()->at(0).attempt, 3);
}

TEST_F(SqliteDatabaseTest, CommittedWritesSurviveKill9) {
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

TEST_F(SqliteDatabaseTest, UsesWalAndFullSync) {
  auto database = SqliteDatabase::Open(dir_);
  ASSERT_TRUE(database.ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/coach.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "wal");
  sqlite3_finalize(s);
  sqlite3_close(db);
}

TEST_F(SqliteDatabaseTest, RefusesNewerSchema) {
  ASSERT_TRUE(SqliteDatabase::Open(dir_).ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/coach.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "INSERT INTO schema_migrations VALUES (99, 0)", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(SqliteDatabase::Open(dir_).status().code(), absl::StatusCode::kFailedPrecondition);
}

// A transaction whose body fails leaves nothing of what it wrote; one that succeeds keeps
// all of it.
TEST_F(SqliteDatabaseTest, AFailedTransactionRollsBack) {
  auto opened = SqliteDatabase::Open(dir_);
  ASSERT_TRUE(opened.ok()) << opened.status();
  SqliteDatabase& database = **opened;
  auto count_jobs = [&database]() -> int64_t {
    absl::MutexLock lock(&database.mu());
    auto q = database.Statement("SELECT COUNT(*) FROM jobs");
    EXPECT_TRUE(q.ok()) << q.status();
    EXPECT_TRUE(*q->Step());
    return q->Int(0);
  };
  auto insert = [&database](const std::string& name) -> absl::Status {
    auto s = database.Statement(
        "INSERT INTO jobs (namespace, name, uid, kind, resource_version, generation, created_us, "
        "labels_json, job) VALUES ('ns', ?, ?, 0, 1, 1, 0, '{}', x'')");
    if (!s.ok()) return s.status();
    s->Bind(1, name).Bind(2, "uid-" + name);
    return s->Run();
  };
  {
    absl::MutexLock lock(&database.mu());
    absl::Status failed =
        database.InTransaction(SqliteDatabase::Commit::kBuffered, [&]() -> absl::Status {
          if (absl::Status s = insert("a"); !s.ok()) return s;
          return absl::AbortedError("injected");
        });
    EXPECT_TRUE(absl::IsAborted(failed)) << failed;
  }
  EXPECT_EQ(count_jobs(), 0);
  {
    absl::MutexLock lock(&database.mu());
    EXPECT_TRUE(database
                    .InTransaction(SqliteDatabase::Commit::kSynced,
                                   [&] {
                                     if (absl::Status s = insert("a"); !s.ok()) return s;
                                     return insert("b");
                                   })
                    .ok());
    EXPECT_TRUE(database.JobExists({"ns", "b"}).ok());
    EXPECT_TRUE(absl::IsNotFound(database.JobExists({"ns", "c"})));
  }
  EXPECT_EQ(count_jobs(), 2);
}

}  // namespace
}  // namespace coach::backend::local
