#pragma once

// An in-memory ObjectStore for tests: the contract of object_store.h (object_store_contract_test
// runs it beside a real S3 store), injectable errors and a record of every call.
//
// It refuses what the real store refuses before sending anything (bad keys, prefixes and bounds,
// with the same codes), then applies injected errors, then acts. last_modified is the clock's
// time floored to the second (as SeaweedFS reports it). Thread-safe.

#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "integrations/s3/object_store.h"

namespace coach::s3::testing {

class FakeObjectStore final : public ObjectStore {
 public:
  enum class Op { kPut, kGet, kList, kDelete };

  struct Call {
    Op op;
    std::string key;      // the key; for kList the prefix
    size_t bytes = 0;     // kPut: the object's size; kGet: max_bytes
    int max_keys = 0;     // kList
    absl::Status result;  // what the call returned (its status)
  };

  struct Options {
    Clock* clock = Clock::Real();
    // Pages a List walks through (counted in list_pages()), as S3's max-keys does.
    int list_page_size = 1000;
  };

  FakeObjectStore() : FakeObjectStore(Options{}) {}
  explicit FakeObjectStore(Options options) : options_(options) {}

  absl::Status Put(absl::string_view key, absl::string_view bytes) override;
  absl::StatusOr<std::string> Get(absl::string_view key, size_t max_bytes) override;
  absl::StatusOr<ListResult> List(absl::string_view prefix, int max_keys) override;
  absl::Status Delete(absl::string_view key) override;

  // The next call of `op` that passes validation fails with `status` and changes nothing; queued
  // statuses are used once each, in order.
  void InjectError(Op op, absl::Status status);
  // Every call that passes validation fails with `status` (a store that is down: Unavailable; a
  // wrong secret: PermissionDenied) until FailAll(absl::OkStatus()).
  void FailAll(absl::Status status);

  std::vector<Call> calls() const;
  void ClearCalls();
  // What is stored, by key.
  std::map<std::string, std::string> objects() const;
  // ListObjectsV2 pages the Lists so far walked through.
  int list_pages() const;

 private:
  struct Object {
    std::string bytes;
    absl::Time last_modified;
  };
  // The injected failure for `op`, if any (OK otherwise). Requires mu_.
  absl::Status Injected(Op op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Record(Call call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable absl::Mutex mu_;
  std::map<std::string, Object> objects_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int, std::deque<absl::Status>> injected_ ABSL_GUARDED_BY(mu_);
  absl::Status fail_all_ ABSL_GUARDED_BY(mu_);
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
  int list_pages_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace coach::s3::testing
