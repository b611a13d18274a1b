// What the fake adds to the contract (object_store_contract_test covers the contract itself):
// injected errors, the call record, page counting.
#include "integrations/s3/testing/fake_object_store.h"

#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"

namespace coach::s3::testing {
namespace {

using Op = FakeObjectStore::Op;

TEST(FakeObjectStoreTest, InjectedErrorsApplyOnceEachInOrderAndChangeNothing) {
  FakeObjectStore store;
  store.InjectError(Op::kPut, absl::UnavailableError("first"));
  store.InjectError(Op::kPut, absl::PermissionDeniedError("second"));
  EXPECT_TRUE(absl::IsUnavailable(store.Put("k", "v")));
  EXPECT_TRUE(absl::IsPermissionDenied(store.Put("k", "v")));
  EXPECT_TRUE(store.objects().empty());
  EXPECT_TRUE(store.Put("k", "v").ok());
  EXPECT_EQ(store.objects().at("k"), "v");
  // Validation comes first, as in the real store: an injected error is not used up by it.
  store.InjectError(Op::kGet, absl::UnavailableError("later"));
  EXPECT_TRUE(absl::IsInvalidArgument(store.Get("", 10).status()));
  EXPECT_TRUE(absl::IsUnavailable(store.Get("k", 10).status()));
  EXPECT_TRUE(store.Get("k", 10).ok());
}

TEST(FakeObjectStoreTest, FailAllUntilCleared) {
  FakeObjectStore store;
  store.FailAll(absl::UnavailableError("down"));
  EXPECT_TRUE(absl::IsUnavailable(store.Put("k", "v")));
  EXPECT_TRUE(absl::IsUnavailable(store.List("", 10).status()));
  EXPECT_TRUE(absl::IsUnavailable(store.Delete("k")));
  store.FailAll(absl::OkStatus());
  EXPECT_TRUE(store.Put("k", "v").ok());
}

TEST(FakeObjectStoreTest, RecordsCallsAndPages) {
  FakeClock clock(absl::FromUnixMillis(1700000000500));
  FakeObjectStore store({&clock, /*list_page_size=*/2});
  for (const char* k : {"p/a", "p/b", "p/c", "p/d", "p/e", "q/a"})
    ASSERT_TRUE(store.Put(k, k).ok());
  absl::StatusOr<ListResult> list = store.List("p/", 100);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->objects.size(), 5u);
  EXPECT_EQ(list->objects[0].last_modified, absl::FromUnixSeconds(1700000000));  // floored
  EXPECT_EQ(store.list_pages(), 3);
  EXPECT_TRUE(store.Delete("p/a").ok());
  EXPECT_TRUE(absl::IsNotFound(store.Get("p/a", 1).status()));

  const std::vector<FakeObjectStore::Call> calls = store.calls();
  ASSERT_EQ(calls.size(), 9u);
  EXPECT_EQ(calls[0].op, Op::kPut);
  EXPECT_EQ(calls[0].key, "p/a");
  EXPECT_EQ(calls[0].bytes, 3u);
  EXPECT_EQ(calls[6].op, Op::kList);
  EXPECT_EQ(calls[6].key, "p/");
  EXPECT_EQ(calls[6].max_keys, 100);
  EXPECT_EQ(calls[7].op, Op::kDelete);
  EXPECT_EQ(calls[8].op, Op::kGet);
  EXPECT_TRUE(absl::IsNotFound(calls[8].result));
  store.ClearCalls();
  EXPECT_TRUE(store.calls().empty());
}

}  // namespace
}  // namespace coach::s3::testing
