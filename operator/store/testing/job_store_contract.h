#pragma once

// The behaviour every JobStore must have, as an abstract gtest fixture with one Init per
// implementation (the shape of Ray's store_client_test_base.h). An implementation's test
// derives a fixture that says how to make a fresh store, then instantiates every case:
//
//   class SqliteContractTest : public JobStoreContractTest {
//     std::unique_ptr<JobStore> Init() override { ... }
//   };
//   COACH_JOB_STORE_CONTRACT_TESTS(SqliteContractTest)
//
// It runs against FakeJobStore, SqliteJobStore and CrJobStore on the fake Kubernetes client
// and on a real API server, so a fake cannot drift from what it stands for.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "operator/store/job_store.h"
#include "operator/store/testing/test_jobs.h"

namespace coach::store::testing {

class JobStoreContractTest : public ::testing::Test {
 public:
  // The namespaces the cases use, by the names they give them (Ns maps them).
  static const std::vector<std::string>& Namespaces();

 protected:
  // A fresh store in which every namespace of Namespaces() is empty and that lists at most
  // the newest 5 events of a job. Null fails the test. A fixture that may skip (no API
  // server) overrides SetUp and calls GTEST_SKIP() before the base's SetUp.
  virtual std::unique_ptr<JobStore> Init() = 0;
  // The namespace the cases call `name`. Must keep the order of the names: a shared API
  // server gives each test its own namespaces by a common prefix.
  virtual std::string Ns(const std::string& name) const { return name; }
  // Waits until the events appended so far are listed (CrJobStore writes them
  // asynchronously).
  virtual void FlushEvents() {}
  // Local stores count resource versions "1", "2", ... and ignore a forged uid on Update;
  // the API server's versions are opaque and it refuses a changed uid (a conflict).
  virtual bool IsLocal() const { return true; }

  void SetUp() override;

  // The cases (job_store_contract.cc).
  void CreateAssignsIdentityAndGetReturnsIt();
  void CreateDuplicateIsAlreadyExists();
  void CreateRequiresNameAndNamespace();
  void GetMissingIsNotFound();
  void ListIsOrderedAndFiltersNamespace();
  void ListPagesVisitEveryJobOnce();
  void ListRejectsBadTokensAndSizes();
  void ListLabelSelectorFillsPagesWithMatchesOnly();
  void UpdateUsesOptimisticConcurrency();
  void UpdateStatusWritesOnlyStatus();
  void DeleteChecksVersionAndDropsEvents();
  void EventsAreBoundedPerJob();
  void AppendEventsKeepsTheirOrder();

  std::unique_ptr<JobStore> store_;
};

#define COACH_JOB_STORE_CONTRACT_CASE(Fixture, Case) \
  TEST_F(Fixture, Case) { Case(); }

#define COACH_JOB_STORE_CONTRACT_TESTS(Fixture)                                      \
  COACH_JOB_STORE_CONTRACT_CASE(Fixture, CreateAssignsIdentityAndGetReturnsIt)       \
  COACH_JOB_STORE_CONTRACT_CASE(Fixture, CreateDuplicateIsAlreadyExists)             \
  COACH_JOB_STORE_CONTRACT_CASE(Fixture, CreateRequiresNameAndNamespace)             \
  COACH_JOB_STORE_CONTRACT_CASE(Fixture, GetMissingIsNotFound)                       \
  COACH_JOB_STORE_CONTRACT_CASE(Fixture, ListIsOrderedAndFiltersNamespace)           \
  COACH_JOB_STORE_CONTRACT_CASE(Fixture, ListPagesVisitEveryJobOnce)                 \
  COACH_JOB_STORE_CONTRACT_CASE(Fixture, ListRejectsBadTokensAndSizes)               \
  COACH_JOB_STORE_CONTRACT_CASE(Fixture, ListLabelSelectorFillsPagesWithMatchesOnly) \
  COACH_JOB_STORE_CONTRACT_CASE(Fixture, UpdateUsesOptimisticConcurrency)            \
  COACH_JOB_STORE_CONTRACT_CASE(Fixture, UpdateStatusWritesOnlyStatus)               \
  COACH_JOB_STORE_CONTRACT_CASE(Fixture, DeleteChecksVersionAndDropsEvents)          \
  COACH_JOB_STORE_CONTRACT_CASE(Fixture, EventsAreBoundedPerJob)                     \
  COACH_JOB_STORE_CONTRACT_CASE(Fixture, AppendEventsKeepsTheirOrder)

}  // namespace coach::store::testing
