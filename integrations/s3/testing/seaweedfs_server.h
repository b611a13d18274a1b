#pragma once

// A real SeaweedFS S3 store for tests, started and stopped through tools/testenv/seaweedfs
// (linked from testdata/, a data dependency): one process on free loopback ports, data in a
// fresh directory under TEST_TMPDIR, a random access key and secret, the bucket coach-logs. The
// store is stopped when the object goes, or by the script's watcher when the test process dies.
//
// When weed is not built (tools/testenv/seaweedfs build; a build in progress is waited for up to
// 10 minutes), Start returns NotFound; tests use COACH_REQUIRE_SEAWEEDFS (or the same check) so
// that this skips locally and fails under CI=true.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "integrations/s3/s3_object_store.h"

namespace coach::s3::testing {

class SeaweedFsServer {
 public:
  // NotFound when weed is not built; Unavailable (with the script's log) when it does not come
  // up.
  static absl::StatusOr<std::unique_ptr<SeaweedFsServer>> Start();
  ~SeaweedFsServer();
  SeaweedFsServer(const SeaweedFsServer&) = delete;
  SeaweedFsServer& operator=(const SeaweedFsServer&) = delete;

  // `down`; later calls do nothing.
  absl::Status Stop();

  // Endpoint, bucket, region and credentials of this store (`seaweedfs env`).
  const S3Options& options() const { return options_; }
  const std::string& dir() const { return dir_; }

 private:
  SeaweedFsServer() = default;

  std::string script_;
  std::string dir_;
  S3Options options_;
  bool running_ = false;
};

// True under CI=true (or 1): a missing weed must fail, not skip.
bool InCi();

}  // namespace coach::s3::testing

// In a test: `COACH_REQUIRE_SEAWEEDFS(server, SeaweedFsServer::Start());` declares `server` (a
// std::unique_ptr<SeaweedFsServer>) or skips (fails under CI=true) when weed is not built.
#define COACH_REQUIRE_SEAWEEDFS(var, expr)                                      \
  auto var##_or = (expr);                                                       \
  if (!var##_or.ok()) {                                                         \
    if (absl::IsNotFound(var##_or.status()) && !::coach::s3::testing::InCi()) { \
      GTEST_SKIP() << var##_or.status().message();                              \
    }                                                                           \
    FAIL() << var##_or.status();                                                \
  }                                                                             \
  auto var = std::move(var##_or).value()
