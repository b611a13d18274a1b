#include "operator/store/testing/fake_job_store.h"

#include <gtest/gtest.h>

#include "operator/store/testing/job_store_contract.h"

namespace coach::store::testing {
namespace {

class FakeContractTest : public JobStoreContractTest {
  std::unique_ptr<JobStore> Init() override { return std::make_unique<FakeJobStore>(5); }
};
COACH_JOB_STORE_CONTRACT_TESTS(FakeContractTest)

TEST(FakeJobStoreTest, InjectedErrorFailsOnceAndCallsAreRecorded) {
  FakeJobStore store;
  store.InjectError("Create", absl::UnavailableError("disk"));
  EXPECT_EQ(store.Create(MakeJob("ns", "a")).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(store.Create(MakeJob("ns", "a")).ok());
  EXPECT_TRUE(store.Get({"ns", "a"}).ok());
  EXPECT_EQ(store.calls(), (std::vector<std::string>{"Create", "Create", "Get"}));
}

}  // namespace
}  // namespace coach::store::testing
