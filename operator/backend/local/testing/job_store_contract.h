#pragma once

// The behaviour every JobStore must have, as a value-parameterized gtest suite. A
// JobStore implementation's test instantiates it with a factory:
//
//   INSTANTIATE_TEST_SUITE_P(Sqlite, JobStoreContractTest,
//                            ::testing::Values(JobStoreFactory{"sqlite", &MakeStore}));

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "operator/backend/local/job_store.h"
#include "operator/backend/local/testing/test_jobs.h"

namespace coach::backend::local::testing {

struct JobStoreFactory {
  std::string name;
  // A fresh, empty store whose state lives under `dir` (which exists and is empty).
  // The contract's events tests assume max_events_per_job == 5.
  std::function<std::unique_ptr<JobStore>(const std::string& dir)> make;
};

inline std::ostream& operator<<(std::ostream& os, const JobStoreFactory& f) {
  return os << f.name;
}

class JobStoreContractTest : public ::testing::TestWithParam<JobStoreFactory> {
 protected:
  void SetUp() override;
  std::string dir_;
  std::unique_ptr<JobStore> store_;
};

}  // namespace coach::backend::local::testing
