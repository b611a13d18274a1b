#include "operator/backend/local/store/sqlite_job_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/fake_clock.h"
#include "operator/backend/local/fs_util.h"
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

// A fresh directory per test.
std::string TestDir(const std::string& prefix) {
  static int counter = 0;
  const char* tmp = getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(tmp ? tmp : "/tmp", "/", prefix, "-", ++counter);
  EXPECT_TRUE(MakeDirs(dir).ok());
  return dir;
}

class SqliteContractTest : public store::testing::JobStoreContractTest {
  std::unique_ptr<store::JobStore> Init() override { return MakeSqlite(TestDir("contract")); }
};
COACH_JOB_STORE_CONTRACT_TESTS(SqliteContractTest)

class SqliteJobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = getenv("TEST_TMPDIR");
    dir_ = absl::StrCat(tmp ? tmp : "/tmp", "/sqlite-",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  std::string dir_;
};

// A database truncated to 0 bytes (or deleted) beside replicas of an earlier run is refused, not
// taken as an empty store (jobs would vanish and a resubmit would run twice).
TEST_F(SqliteJobStoreTest, AnEmptyOrMissingDatabaseBesideExistingStateIsRefused) {
  {
    auto store = SqliteJobStore::Open(dir_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->Create(MakeJob("ns", "a")).ok());
  }
  ASSERT_TRUE(MakeDirs(dir_ + "/replicas/ns/a").ok());
  ASSERT_EQ(::truncate((dir_ + "/coach.db").c_str(), 0), 0);
  ::unlink((dir_ + "/coach.db-wal").c_str());
  auto refused = SqliteJobStore::Open(dir_);
  ASSERT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("is empty but"), std::string::npos) << refused.status();
  ASSERT_EQ(::unlink((dir_ + "/coach.db").c_str()), 0);
  refused = SqliteJobStore::Open(dir_);
  ASSERT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("is missing but"), std::string::npos);
  // A fresh state directory (no replicas) opens as an empty store.
  ASSERT_EQ(::rmdir((dir_ + "/replicas/ns/a").c_str()), 0);
  ASSERT_EQ(::rmdir((dir_ + "/replicas/ns").c_str()), 0);
  EXPECT_TRUE(SqliteJobStore::Open(dir_).ok());
}

TEST_F(SqliteJobStoreTest, TheStateDirectoryIsPrivate) {
  ASSERT_TRUE(MakeDirs(dir_).ok());
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  ASSERT_TRUE(SqliteJobStore::Open(dir_).ok());
  struct stat st {};
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

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
  ASSERT_EQ(
      sqlite3_exec(db, "INSERT INTO schema_migrations VALUES (99, 0)", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(SqliteJobStore::Open(dir_).status().code(), absl::StatusCode::kFailedPrecondition);
}

// A database of schema 2 (before the objects table) is brought up to date on open, its jobs
// kept.
TEST_F(SqliteJobStoreTest, MigratesASchema2Database) {
  {
    auto store = SqliteJobStore::Open(dir_);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Create(MakeJob("ns", "a")).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/coach.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DROP TABLE objects; DELETE FROM schema_migrations WHERE version > 2",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto store = SqliteJobStore::Open(dir_);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(*(*store)->SchemaVersion(), 3);
  EXPECT_TRUE((*store)->Get({"ns", "a"}).ok());
  ASSERT_TRUE((*store)->AddObjects({"ns", "a"}, {{"Service", "a-worker-0"}}).ok());
  EXPECT_EQ((*store)->ListObjects({"ns", "a"})->size(), 1u);
}

TEST_F(SqliteJobStoreTest, InjectedClockSetsCreationTimestamp) {
  SqliteJobStore::Options options;
  FakeClock clock(absl::FromUnixSeconds(1700000000) + absl::Milliseconds(250));
  options.clock = &clock;
  auto store = SqliteJobStore::Open(dir_, options);
  ASSERT_TRUE(store.ok());
  auto job = (*store)->Create(MakeJob("ns", "a"));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->metadata().creation_timestamp().seconds(), 1700000000);
  EXPECT_EQ(job->metadata().creation_timestamp().nanos(), 250000000);
}

// The local backend's records (ReplicaStore), on the same sqlite file as the jobs: deleting
// a job deletes its records in the same transaction.
class SqliteReplicaStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = MakeSqlite(TestDir("replicas"));
    ASSERT_NE(store_, nullptr);
  }
  std::unique_ptr<SqliteJobStore> store_;
};

TEST_F(SqliteReplicaStoreTest, DeleteCascadesAndChecksVersion) {
  auto job = store_->Create(MakeJob("ns", "a"));
  ASSERT_TRUE(job.ok());
  ReplicaRecord r;
  r.job = {"ns", "a"};
  r.name = "a-worker-0";
  ASSERT_TRUE(store_->PutReplica(r).ok());
  ASSERT_TRUE(store_->AppendEvent({"ns", "a"}, {"Normal", "Created", "m", absl::Now()}).ok());
  ASSERT_TRUE(store_->ReservePorts({{45001, {"ns", "a"}, "a-worker-0", "master"}}).ok());

  EXPECT_EQ(store_->Delete({"ns", "a"}, std::string("7")).code(), absl::StatusCode::kAborted);
  ASSERT_TRUE(store_->Delete({"ns", "a"}, std::string("1")).ok());
  EXPECT_EQ(store_->Get({"ns", "a"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Delete({"ns", "a"}, std::nullopt).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->ListReplicas({"ns", "a"})->empty());
  EXPECT_TRUE(store_->ListEvents({"ns", "a"})->empty());
  EXPECT_TRUE(store_->ListPortReservations()->empty());
  // The name can be reused, as a new job.
  auto again = store_->Create(MakeJob("ns", "a"));
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->metadata().uid(), job->metadata().uid());
  EXPECT_TRUE(store_->ListReplicas({"ns", "a"})->empty());
}

TEST_F(SqliteReplicaStoreTest, ObjectsAreKeptPerJobAndGoWithIt) {
  ASSERT_TRUE(store_->Create(MakeJob("ns", "a")).ok());
  ASSERT_TRUE(store_->Create(MakeJob("ns", "b")).ok());
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
  ASSERT_TRUE(store_->Delete({"ns", "a"}, std::nullopt).ok());
  EXPECT_TRUE(store_->ListObjects({"ns", "a"})->empty()) << "deleted with the job";
  EXPECT_EQ(*store_->ListObjects({"ns", "b"}), (Objects{{"Service", "b-worker-0"}}));
  ASSERT_TRUE(store_->RemoveObjects({"ns", "b"}).ok());
  EXPECT_TRUE(store_->ListObjects({"ns", "b"})->empty());
}

TEST_F(SqliteReplicaStoreTest, PutReplicasWritesAllOrNone) {
  ASSERT_TRUE(store_->Create(MakeJob("ns", "a")).ok());
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
  ASSERT_TRUE(store_->Create(MakeJob("ns", "a")).ok());
  ASSERT_TRUE(store_->Create(MakeJob("ns", "b")).ok());
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
  ASSERT_TRUE(store_->Create(MakeJob("ns", "a")).ok());
  ASSERT_TRUE(store_->Create(MakeJob("ns", "b")).ok());
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
  ASSERT_TRUE(store_->Create(MakeJob("ns", "a")).ok());
  ASSERT_TRUE(store_->Create(MakeJob("ns", "b")).ok());
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
