#pragma once

// ObjectStore: the boundary to a bucket of an S3-compatible object store, where coach keeps what
// outlives a pod (each job attempt's logs). One implementation speaks S3 over HTTP
// (s3_object_store.h); testing/fake_object_store.h keeps objects in memory. Both answer the
// same contract suite (object_store_contract_test.cc), so the fake cannot drift.
//
// Keys (ValidateKey): 1 to 1024 bytes of valid UTF-8, '/'-separated segments that are neither
// empty nor "." nor "..", no leading or trailing '/', no control characters (U+0000-U+001F,
// U+007F) and no '\'. S3 itself takes more, but filer-backed stores (SeaweedFS) map keys to
// paths and treat those differently; a key this contract accepts reads back byte for byte
// everywhere. A List prefix follows the same rules except that it may be empty and may end
// with '/'.
//
// Errors, for every method:
//   InvalidArgument   a key, prefix or bound this contract refuses (nothing was sent), or the
//                     store refused the request as malformed (HTTP 400).
//   PermissionDenied  the store refused the credentials or the action (HTTP 401/403: a wrong
//                     secret, an unknown access key, a policy).
//   NotFound          Get: no object under the key. Any method: the bucket does not exist.
//   Unavailable       the store could not be reached or did not answer in time (refused
//                     connection, DNS, TLS, timeout, broken connection) or answered 429/5xx,
//                     or S3's RequestTimeout/SlowDown. Worth retrying later; nothing here
//                     retries.
//   Aborted           HTTP 409 (a conflicting concurrent operation). Worth retrying.
//   Internal          an answer that breaks the S3 protocol (unparsable or oversized listing)
//                     or any other HTTP status.
// Messages name the operation, the key or prefix, the HTTP status and S3's error code and
// message; never a credential.
//
// Implementations are thread-safe.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace coach::s3 {

// The largest object Put takes in one request (S3's single-PUT limit: 5 GiB).
inline constexpr uint64_t kMaxPutBytes = uint64_t{5} << 30;
// S3's key limit, in bytes of UTF-8.
inline constexpr size_t kMaxKeyBytes = 1024;

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;         // bytes
  absl::Time last_modified;  // as the store reports it (S3: second or millisecond precision)
};

struct ListResult {
  std::vector<ObjectInfo> objects;  // ascending by key (byte order of the UTF-8)
  bool truncated = false;           // more keys under the prefix than max_keys allowed
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // Stores `bytes` under `key`, replacing any object there (last writer wins). Readers see
  // either the old or the new object, never a mix. InvalidArgument also when `bytes` exceeds
  // kMaxPutBytes; NotFound when the bucket does not exist.
  virtual absl::Status Put(absl::string_view key, absl::string_view bytes) = 0;

  // The object's bytes. NotFound when there is no object under `key`. ResourceExhausted when the
  // object is larger than `max_bytes` (nothing is returned: a truncated log read as whole would
  // mislead; the implementation stops reading after max_bytes + 1 bytes, so memory stays
  // bounded). InvalidArgument for a bad key.
  virtual absl::StatusOr<std::string> Get(absl::string_view key, size_t max_bytes) = 0;

  // The first `max_keys` objects whose keys start with `prefix` ("" for all), ascending by key,
  // with `truncated` set when more exist. The implementation pages through the store as needed
  // (S3: ListObjectsV2 with continuation tokens). InvalidArgument when max_keys < 1 or the
  // prefix is refused.
  virtual absl::StatusOr<ListResult> List(absl::string_view prefix, int max_keys) = 0;

  // Removes the object under `key`. Idempotent: OK when there was none.
  virtual absl::Status Delete(absl::string_view key) = 0;
};

// InvalidArgument (naming the rule broken, quoting the key only when it is short and printable)
// unless `key` follows the key rules above.
absl::Status ValidateKey(absl::string_view key);
// The same for a List prefix: may be empty and may end with '/'.
absl::Status ValidatePrefix(absl::string_view prefix);

}  // namespace coach::s3
