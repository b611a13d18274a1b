#include "operator/backend/local/testing/fake_job_store.h"

#include <gtest/gtest.h>

#include "operator/backend/local/testing/job_store_contract.h"

namespace coach::backend::local::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Fake, JobStoreContractTest,
                         ::testing::Values(JobStoreFactory{
                             "fake", [](const std::string&) -> std::unique_ptr<JobStore> {
                               return std::make_unique<FakeJobStore>(5);
                             }}));

TEST(FakeJobStoreTest, InjectedErrorFailsOnceAndCallsAreRecorded) {
  FakeJobStore store;
  store.InjectError("Create", absl::UnavailableError("disk"));
  EXPECT_EQ(store.Create(MakeJob("ns", "a")).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(store.Create(MakeJob("ns", "a")).ok());
  EXPECT_TRUE(store.Get({"ns", "a"}).ok());
  EXPECT_EQ(store.calls(), (std::vector<std::string>{"Create", "Create", "Get"}));
}

}  // namespace
}  // namespace coach::backend::local::testing
