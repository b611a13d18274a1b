#include "operator/history/history_store.h"

#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"
#include "integrations/s3/testing/fake_object_store.h"

namespace coach::history {
namespace {

api::v1::JobHistory Record(const std::string& ns, const std::string& name, const std::string& uid) {
  api::v1::JobHistory record;
  record.mutable_job()->mutable_metadata()->set_namespace_(ns);
  record.mutable_job()->mutable_metadata()->set_name(name);
  record.mutable_job()->mutable_metadata()->set_uid(uid);
  record.set_deleted_by("ttl");
  auto* attempt = record.mutable_job()->mutable_status()->mutable_coach()->add_attempts();
  attempt->set_reason("Failed");
  attempt->set_exit_code(137);
  return record;
}

class HistoryStoreTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  s3::testing::FakeObjectStore objects_{s3::testing::FakeObjectStore::Options{&clock_}};
  HistoryStore store_{&objects_, "coach/"};
};

TEST_F(HistoryStoreTest, LogsAreKeptPerAttemptAndReplica) {
  const JobRef job{"team-a", "ddp", "u-1"};
  ASSERT_TRUE(store_.PutLog(job, 0, "worker-0", "first\n").ok());
  ASSERT_TRUE(store_.PutLog(job, 1, "worker-0", "second\n").ok());
  ASSERT_TRUE(store_.PutLog(job, 1, "master-0", "m\n").ok());
  EXPECT_EQ(objects_.objects().count("coach/logs/team-a/ddp/u-1/attempt-0/worker-0.log"), 1u);
  EXPECT_EQ(*store_.GetLog(job, 0, "worker-0", 100), "first\n");
  EXPECT_EQ(*store_.GetLog(job, 1, "worker-0", 100), "second\n");
  EXPECT_TRUE(absl::IsNotFound(store_.GetLog(job, 2, "worker-0", 100).status()));
  EXPECT_TRUE(absl::IsResourceExhausted(store_.GetLog(job, 0, "worker-0", 2).status()));
  EXPECT_EQ(*store_.ReplicasOf(job, 1, 10), (std::vector<std::string>{"master-0", "worker-0"}));
  EXPECT_EQ(
      *store_.ListLogs(job, 10),
      (std::vector<std::string>{"attempt-0/worker-0", "attempt-1/master-0", "attempt-1/worker-0"}));
  // Another job of the same name (a new uid) keeps its own.
  EXPECT_TRUE(store_.ReplicasOf({"team-a", "ddp", "u-2"}, 1, 10)->empty());
}

TEST_F(HistoryStoreTest, NamesAreCheckedBeforeAnyKeyIsMade) {
  const JobRef job{"team-a", "ddp", "u-1"};
  EXPECT_EQ(store_.PutLog(job, 0, "../x", "t").message(),
            "replica: must be letters, digits, '-', '.' or '_'");
  EXPECT_EQ(store_.PutLog({"Team", "ddp", "u"}, 0, "w", "t").message(),
            "namespace: must be lowercase letters, digits, '-' or '.'");
  EXPECT_EQ(store_.PutLog({"a", "ddp", "u/../../x"}, 0, "w", "t").message(),
            "uid: must be letters, digits, '-', '.' or '_'");
  EXPECT_EQ(store_.PutLog(job, -1, "w", "t").message(), "attempt: must be 0 to 1000000, got -1");
  EXPECT_TRUE(objects_.calls().empty());
  EXPECT_FALSE(HistoryStore::ValidatePrefix("coach").ok());
  EXPECT_TRUE(HistoryStore::ValidatePrefix("coach/history/").ok());
  EXPECT_TRUE(HistoryStore::ValidatePrefix("").ok());
}

TEST_F(HistoryStoreTest, RecordsListNewestDeletionFirstAndAreSweptWithTheirLogs) {
  ASSERT_TRUE(store_.PutRecord(Record("team-a", "ddp", "u-1")).ok());
  ASSERT_TRUE(store_.PutLog({"team-a", "ddp", "u-1"}, 0, "worker-0", "x").ok());
  clock_.Advance(absl::Hours(1));
  ASSERT_TRUE(store_.PutRecord(Record("team-a", "ddp", "u-2")).ok());
  ASSERT_TRUE(store_.PutRecord(Record("team-b", "ddp", "u-3")).ok());
  ASSERT_TRUE(store_.PutRecord(Record("team-a", "other", "u-4")).ok());

  bool truncated = false;
  auto all = store_.ListRecords("", "", 10, &truncated);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 4u);
  EXPECT_FALSE(truncated);
  EXPECT_EQ(all->back().job().metadata().uid(), "u-1");  // the oldest deletion last
  auto named = store_.ListRecords("", "ddp", 10, &truncated);
  EXPECT_EQ(named->size(), 3u);
  auto in_ns = store_.ListRecords("team-a", "ddp", 1, &truncated);
  ASSERT_EQ(in_ns->size(), 1u);
  EXPECT_TRUE(truncated);
  EXPECT_EQ(in_ns->front().job().metadata().uid(), "u-2");
  auto one = store_.GetRecord({"team-a", "ddp", "u-1"});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->job().status().coach().attempts(0).exit_code(), 137);
  EXPECT_EQ(one->deleted_by(), "ttl");

  // Past the retention of the first record only.
  clock_.Advance(absl::Minutes(30));
  auto swept = store_.Sweep(clock_.Now(), absl::Minutes(60));
  ASSERT_TRUE(swept.ok()) << swept.status();
  EXPECT_EQ(*swept, 1);
  EXPECT_TRUE(absl::IsNotFound(store_.GetRecord({"team-a", "ddp", "u-1"}).status()));
  EXPECT_TRUE(store_.ListLogs({"team-a", "ddp", "u-1"}, 10)->empty());
  EXPECT_EQ(store_.ListRecords("", "", 10, &truncated)->size(), 3u);
}

TEST_F(HistoryStoreTest, AStoreThatFailsSaysSo) {
  objects_.FailAll(absl::UnavailableError("down"));
  EXPECT_TRUE(absl::IsUnavailable(store_.PutLog({"a", "b", "c"}, 0, "w", "t")));
  bool truncated = false;
  EXPECT_TRUE(absl::IsUnavailable(store_.ListRecords("", "", 1, &truncated).status()));
}

}  // namespace
}  // namespace coach::history
