// The Backend contract (operator/backend/testing/backend_contract.h) on the local backend:
// real processes under the real coach-replica-shim, jobs in a real sqlite store.

#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/test_dir.h"
#include "gtest/gtest.h"
#include "operator/backend/local/local_backend.h"
#include "operator/backend/local/store/sqlite_job_store.h"
#include "operator/backend/local/testing/fake_gpu_discovery.h"
#include "operator/backend/testing/backend_contract.h"

namespace coach::backend::local {
namespace {

class LocalContractTest : public backend::testing::BackendContractTest {
 protected:
  std::unique_ptr<Backend> Init() override {
    const std::string dir = ::coach::testing::FreshTestDir(
        absl::StrCat("contract-", ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    auto store = SqliteJobStore::Open(dir + "/state");
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return nullptr;
    store_ = std::move(*store);
    const char* srcdir = getenv("TEST_SRCDIR");
    const char* ws = getenv("TEST_WORKSPACE");
    LocalBackendOptions o;
    o.state_dir = dir + "/state";
    o.store = store_->replicas();
    o.jobs = store_.get();
    o.shim_path = absl::StrCat(srcdir ? srcdir : ".", "/", ws ? ws : "coach",
                               "/operator/backend/local/coach-replica-shim");
    o.poll_interval = absl::Milliseconds(20);
    o.grace_period = absl::Seconds(2);
    o.gpus = &gpus_;
    o.node_name = "testnode";
    o.base_env = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/nonexistent"}, {"LANG", "C.UTF-8"}};
    auto backend = LocalBackend::Create(o);
    EXPECT_TRUE(backend.ok()) << backend.status();
    if (!backend.ok()) return nullptr;
    absl::Status started = (*backend)->Start();
    EXPECT_TRUE(started.ok()) << started;
    return std::move(*backend);
  }

  model::Job Stored(model::Job job) override {
    auto stored = store_->Create(job);
    EXPECT_TRUE(stored.ok()) << stored.status();
    return stored.ok() ? *stored : job;
  }

  testing::FakeGpuDiscovery gpus_{0};
  std::unique_ptr<SqliteJobStore> store_;
};

COACH_BACKEND_CONTRACT_TESTS(LocalContractTest)

}  // namespace
}  // namespace coach::backend::local
