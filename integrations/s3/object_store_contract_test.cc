// The ObjectStore contract (object_store.h), one suite run against every implementation: the
// in-memory fake (testing/fake_object_store.h) and S3ObjectStore against a real SeaweedFS
// (testing/seaweedfs_server.h), so the fake cannot drift from the real thing. As Ray's
// store_client_test_base.h: an abstract StoreUnderTest with one implementation per store, and
// the same TYPED_TESTs for each.
//
// The SeaweedFS half starts one server for the suite (tools/testenv/seaweedfs up) and stops it
// at the end; without a built weed it skips, and fails under CI=true.

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integrations/s3/object_store.h"
#include "integrations/s3/s3_object_store.h"
#include "integrations/s3/testing/fake_object_store.h"
#include "integrations/s3/testing/seaweedfs_server.h"

namespace coach::s3 {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Small, so that listings span several pages.
constexpr int kPageSize = 3;

class StoreUnderTest {
 public:
  virtual ~StoreUnderTest() = default;
  // Once per test, before the Make* calls. NotFound: the store cannot run here (skipped, failed
  // under CI=true).
  virtual absl::Status Init() = 0;
  // Stores sharing one bucket: what one puts, another reads.
  virtual std::unique_ptr<ObjectStore> Make(int list_page_size) = 0;
  // The same bucket with a wrong secret.
  virtual std::unique_ptr<ObjectStore> MakeWithWrongSecret() = 0;
  // A store nothing answers for.
  virtual std::unique_ptr<ObjectStore> MakeUnreachable() = 0;
  // Secrets that must appear in no message.
  virtual std::vector<std::string> Secrets() = 0;
};

// Forwards to a shared store (several ObjectStores onto one bucket).
class Forwarding : public ObjectStore {
 public:
  explicit Forwarding(std::shared_ptr<ObjectStore> to) : to_(std::move(to)) {}
  absl::Status Put(absl::string_view key, absl::string_view bytes) override {
    return to_->Put(key, bytes);
  }
  absl::StatusOr<std::string> Get(absl::string_view key, size_t max_bytes) override {
    return to_->Get(key, max_bytes);
  }
  absl::StatusOr<ListResult> List(absl::string_view prefix, int max_keys) override {
    return to_->List(prefix, max_keys);
  }
  absl::Status Delete(absl::string_view key) override { return to_->Delete(key); }

 private:
  std::shared_ptr<ObjectStore> to_;
};

class Fake : public StoreUnderTest {
 public:
  static std::string Name() { return "Fake"; }
  static void TearDownSuite() {}

  absl::Status Init() override {
    testing::FakeObjectStore::Options o;
    o.list_page_size = kPageSize;
    fake_ = std::make_shared<testing::FakeObjectStore>(o);
    return absl::OkStatus();
  }
  std::unique_ptr<ObjectStore> Make(int) override { return std::make_unique<Forwarding>(fake_); }
  std::unique_ptr<ObjectStore> MakeWithWrongSecret() override {
    auto store = std::make_unique<testing::FakeObjectStore>();
    store->FailAll(absl::PermissionDeniedError("fake: SignatureDoesNotMatch"));
    return store;
  }
  std::unique_ptr<ObjectStore> MakeUnreachable() override {
    auto store = std::make_unique<testing::FakeObjectStore>();
    store->FailAll(absl::UnavailableError("fake: connection refused"));
    return store;
  }
  std::vector<std::string> Secrets() override { return {}; }

 private:
  std::shared_ptr<testing::FakeObjectStore> fake_;
};

class SeaweedFs : public StoreUnderTest {
 public:
  static std::string Name() { return "SeaweedFs"; }
  static void TearDownSuite() {
    if (server_ != nullptr) {
      absl::Status s = server_->Stop();
      EXPECT_TRUE(s.ok()) << s;
    }
    server_.reset();
  }

  absl::Status Init() override {
    if (!tried_) {
      tried_ = true;
      absl::StatusOr<std::unique_ptr<testing::SeaweedFsServer>> server =
          testing::SeaweedFsServer::Start();
      start_ = server.status();
      if (server.ok()) server_ = std::move(server).value();
    }
    return start_;
  }
  std::unique_ptr<ObjectStore> Make(int list_page_size) override {
    S3Options o = server_->options();
    o.list_page_size = list_page_size;
    return MakeOrDie(o);
  }
  std::unique_ptr<ObjectStore> MakeWithWrongSecret() override {
    S3Options o = server_->options();
    o.secret_access_key = WrongSecret();
    return MakeOrDie(o);
  }
  std::unique_ptr<ObjectStore> MakeUnreachable() override {
    S3Options o = server_->options();
    o.endpoint = "http://127.0.0.1:1";  // a privileged port no test server holds: refused
    o.timeout = absl::Seconds(5);
    return MakeOrDie(o);
  }
  std::vector<std::string> Secrets() override {
    return {server_->options().secret_access_key, WrongSecret()};
  }

 private:
  static std::string WrongSecret() { return "wrong-secret-0123456789abcdefghijklmnop"; }
  static std::unique_ptr<ObjectStore> MakeOrDie(const S3Options& o) {
    absl::StatusOr<std::unique_ptr<ObjectStore>> store = MakeS3ObjectStore(o);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  static inline bool tried_ = false;
  static inline absl::Status start_;
  static inline std::unique_ptr<testing::SeaweedFsServer> server_;
};

template <typename Impl>
class ObjectStoreContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::Status s = impl_.Init();
    if (!s.ok()) {
      if (absl::IsNotFound(s) && !testing::InCi()) GTEST_SKIP() << s.message();
      FAIL() << s << (testing::InCi() ? " (CI=true: the real store must run)" : "");
    }
    store_ = impl_.Make(kPageSize);
    ASSERT_NE(store_, nullptr);
    // Each test under a prefix of its own: the real half shares one bucket across tests.
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    prefix_ = absl::StrCat("contract/", info->name(), "/");
  }
  static void TearDownTestSuite() { Impl::TearDownSuite(); }

  std::string Key(absl::string_view name) const { return absl::StrCat(prefix_, name); }
  void ExpectNoSecret(const absl::Status& s) {
    for (const std::string& secret : impl_.Secrets()) {
      EXPECT_THAT(s.message(), Not(HasSubstr(secret)));
    }
  }

  Impl impl_;
  std::unique_ptr<ObjectStore> store_;
  std::string prefix_;
};

class ImplName {
 public:
  template <typename T>
  static std::string GetName(int) {
    return T::Name();
  }
};

using Implementations = ::testing::Types<Fake, SeaweedFs>;
TYPED_TEST_SUITE(ObjectStoreContractTest, Implementations, ImplName);

std::vector<std::string> Keys(const ListResult& r) {
  std::vector<std::string> keys;
  for (const ObjectInfo& o : r.objects) keys.push_back(o.key);
  return keys;
}

TYPED_TEST(ObjectStoreContractTest, PutThenGet) {
  ObjectStore& s = *this->store_;
  ASSERT_TRUE(s.Put(this->Key("a.log"), "line 1\nline 2\n").ok());
  absl::StatusOr<std::string> got = s.Get(this->Key("a.log"), 100);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "line 1\nline 2\n");
  // Another store onto the same bucket reads it too.
  got = this->impl_.Make(1000)->Get(this->Key("a.log"), 14);  // exactly its size
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "line 1\nline 2\n");
}

TYPED_TEST(ObjectStoreContractTest, EmptyObject) {
  ObjectStore& s = *this->store_;
  ASSERT_TRUE(s.Put(this->Key("empty"), "").ok());
  absl::StatusOr<std::string> got = s.Get(this->Key("empty"), 0);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "");
  absl::StatusOr<ListResult> list = s.List(this->prefix_, 10);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->objects.size(), 1u);
  EXPECT_EQ(list->objects[0].size, 0u);
}

TYPED_TEST(ObjectStoreContractTest, OverwriteReplaces) {
  ObjectStore& s = *this->store_;
  ASSERT_TRUE(s.Put(this->Key("k"), "first version, longer").ok());
  ASSERT_TRUE(s.Put(this->Key("k"), "second").ok());
  absl::StatusOr<std::string> got = s.Get(this->Key("k"), 100);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "second");
  absl::StatusOr<ListResult> list = s.List(this->prefix_, 10);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->objects.size(), 1u);
  EXPECT_EQ(list->objects[0].size, 6u);
}

TYPED_TEST(ObjectStoreContractTest, GetMissingIsNotFound) {
  absl::StatusOr<std::string> got = this->store_->Get(this->Key("never-put"), 100);
  EXPECT_TRUE(absl::IsNotFound(got.status())) << got.status();
}

TYPED_TEST(ObjectStoreContractTest, GetLargerThanMaxBytesIsResourceExhausted) {
  ObjectStore& s = *this->store_;
  ASSERT_TRUE(s.Put(this->Key("big"), std::string(5000, 'x')).ok());
  absl::StatusOr<std::string> got = s.Get(this->Key("big"), 4999);
  EXPECT_TRUE(absl::IsResourceExhausted(got.status())) << got.status();
  got = s.Get(this->Key("big"), 5000);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size(), 5000u);
}

TYPED_TEST(ObjectStoreContractTest, DeleteIsIdempotent) {
  ObjectStore& s = *this->store_;
  ASSERT_TRUE(s.Put(this->Key("d"), "x").ok());
  ASSERT_TRUE(s.Delete(this->Key("d")).ok());
  EXPECT_TRUE(absl::IsNotFound(s.Get(this->Key("d"), 10).status()));
  EXPECT_TRUE(s.Delete(this->Key("d")).ok());          // again
  EXPECT_TRUE(s.Delete(this->Key("never-put")).ok());  // never there
  absl::StatusOr<ListResult> list = s.List(this->prefix_, 10);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->objects.empty());
  EXPECT_FALSE(list->truncated);
}

TYPED_TEST(ObjectStoreContractTest, ListByPrefixAcrossPages) {
  ObjectStore& s = *this->store_;
  const absl::Time before = Clock::Real()->Now();
  std::vector<std::string> want;
  for (int i = 0; i < 8; ++i) {  // 8 keys: three pages of kPageSize
    const std::string key = this->Key(absl::StrCat("attempt-1/worker-", i, ".log"));
    ASSERT_TRUE(s.Put(key, std::string(i, 'l')).ok());
    want.push_back(key);
  }
  ASSERT_TRUE(s.Put(this->Key("attempt-2/worker-0.log"), "other").ok());
  ASSERT_TRUE(s.Put(this->Key("attempt-10.log"), "sibling").ok());
  const absl::Time after = Clock::Real()->Now();

  absl::StatusOr<ListResult> list = s.List(this->Key("attempt-1/"), 100);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(Keys(*list), want);
  EXPECT_FALSE(list->truncated);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(list->objects[i].size, static_cast<uint64_t>(i));
    EXPECT_GE(list->objects[i].last_modified, before - absl::Seconds(3));
    EXPECT_LE(list->objects[i].last_modified, after + absl::Seconds(2));
  }

  // The bound: the first keys in order, and a flag that more exist.
  list = s.List(this->Key("attempt-1/"), 5);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(Keys(*list), std::vector<std::string>(want.begin(), want.begin() + 5));
  EXPECT_TRUE(list->truncated);
  list = s.List(this->Key("attempt-1/"), 8);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(Keys(*list), want);

  // A prefix that is not a whole segment takes the sibling file and the other folder too.
  list = s.List(this->Key("attempt-"), 100);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->objects.size(), 10u);
  EXPECT_THAT(Keys(*list), ::testing::IsSupersetOf(
                               {this->Key("attempt-10.log"), this->Key("attempt-2/worker-0.log")}));

  list = s.List(this->Key("nothing-here/"), 100);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->objects.empty());
  EXPECT_FALSE(list->truncated);
}

TYPED_TEST(ObjectStoreContractTest, ListIsInByteOrderOfKeys) {
  // '-' and '.' sort before '/': a key beside a "folder" of the same stem comes before the
  // folder's keys, as S3 orders them (a file-tree walk would list the folder first). Put in
  // another order, across pages of kPageSize.
  ObjectStore& s = *this->store_;
  const std::vector<std::string> sorted = {"a-b", "a.c", "a/x", "a/y/z", "a0", "b", "\xC3\xA9"};
  for (const char* name : {"b", "a/y/z", "\xC3\xA9", "a0", "a/x", "a.c", "a-b"}) {
    ASSERT_TRUE(s.Put(this->Key(name), name).ok()) << name;
  }
  std::vector<std::string> want;
  for (const std::string& n : sorted) want.push_back(this->Key(n));
  absl::StatusOr<ListResult> list = s.List(this->prefix_, 100);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(Keys(*list), want);
  list = s.List(this->prefix_, 4);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(Keys(*list), std::vector<std::string>(want.begin(), want.begin() + 4));
  EXPECT_TRUE(list->truncated);
}

TYPED_TEST(ObjectStoreContractTest, KeysWithSpacesUnicodeAndReservedCharacters) {
  ObjectStore& s = *this->store_;
  const std::vector<std::string> names = {
      "with space/and  two  spaces.log",
      "\xC3\xBC\x6E\xC3\xAF c\xC3\xB8\x64\xC3\xA9/\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E.txt",
      "emoji \xF0\x9F\x98\x80/x",
      "reserved +&=?#%;,:@$!'()*[]{}<>\"`^|~.log",
      "deep/a/b/c/d/e/f/g.log",
  };
  for (const std::string& n : names) {
    const std::string key = this->Key(n);
    ASSERT_TRUE(s.Put(key, "bytes of " + n).ok()) << n;
    absl::StatusOr<std::string> got = s.Get(key, 1000);
    ASSERT_TRUE(got.ok()) << n << ": " << got.status();
    EXPECT_EQ(*got, "bytes of " + n);
  }
  absl::StatusOr<ListResult> list = s.List(this->prefix_, 100);
  ASSERT_TRUE(list.ok()) << list.status();
  std::vector<std::string> want;
  for (const std::string& n : names) want.push_back(this->Key(n));
  EXPECT_THAT(Keys(*list), ::testing::UnorderedElementsAreArray(want));
  for (const std::string& n : names) {
    ASSERT_TRUE(s.Delete(this->Key(n)).ok()) << n;
    EXPECT_TRUE(absl::IsNotFound(s.Get(this->Key(n), 1000).status())) << n;
  }
}

TYPED_TEST(ObjectStoreContractTest, OneMebibyteObject) {
  ObjectStore& s = *this->store_;
  std::string bytes(1 << 20, '\0');
  std::mt19937 rng(42);
  for (char& c : bytes) c = static_cast<char>(rng());  // every byte value, NULs included
  ASSERT_TRUE(s.Put(this->Key("1mib.bin"), bytes).ok());
  absl::StatusOr<std::string> got = s.Get(this->Key("1mib.bin"), bytes.size());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == bytes);
  absl::StatusOr<ListResult> list = s.List(this->Key("1mib"), 10);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->objects.size(), 1u);
  EXPECT_EQ(list->objects[0].size, uint64_t{1} << 20);
  EXPECT_TRUE(absl::IsResourceExhausted(s.Get(this->Key("1mib.bin"), (1 << 20) - 1).status()));
}

TYPED_TEST(ObjectStoreContractTest, WrongSecretIsPermissionDenied) {
  ASSERT_TRUE(this->store_->Put(this->Key("secret.log"), "x").ok());
  std::unique_ptr<ObjectStore> wrong = this->impl_.MakeWithWrongSecret();
  ASSERT_NE(wrong, nullptr);
  for (const absl::Status& s :
       {wrong->Put(this->Key("w"), "x"), wrong->Get(this->Key("secret.log"), 10).status(),
        wrong->List(this->prefix_, 10).status(), wrong->Delete(this->Key("secret.log"))}) {
    EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
    this->ExpectNoSecret(s);
  }
  // Nothing changed.
  EXPECT_TRUE(this->store_->Get(this->Key("secret.log"), 10).ok());
  EXPECT_TRUE(absl::IsNotFound(this->store_->Get(this->Key("w"), 10).status()));
}

TYPED_TEST(ObjectStoreContractTest, UnreachableIsUnavailable) {
  std::unique_ptr<ObjectStore> down = this->impl_.MakeUnreachable();
  ASSERT_NE(down, nullptr);
  for (const absl::Status& s :
       {down->Put(this->Key("x"), "x"), down->Get(this->Key("x"), 10).status(),
        down->List(this->prefix_, 10).status(), down->Delete(this->Key("x"))}) {
    EXPECT_TRUE(absl::IsUnavailable(s)) << s;
    this->ExpectNoSecret(s);
  }
}

TYPED_TEST(ObjectStoreContractTest, RefusesBadArgumentsTheSameWay) {
  ObjectStore& s = *this->store_;
  EXPECT_TRUE(absl::IsInvalidArgument(s.Put("", "x")));
  EXPECT_TRUE(absl::IsInvalidArgument(s.Put(this->Key("a//b"), "x")));
  EXPECT_TRUE(absl::IsInvalidArgument(s.Put(this->Key("dir/"), "x")));
  EXPECT_TRUE(absl::IsInvalidArgument(s.Get(this->Key("../x"), 10).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(s.Delete(this->Key("bad\x01"))));
  EXPECT_TRUE(absl::IsInvalidArgument(s.List(this->prefix_, 0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(s.List("/abs", 10).status()));
}

}  // namespace
}  // namespace coach::s3
