#pragma once

// The behaviour every Backend must have, as an abstract gtest fixture with one Init per
// implementation (the shape of operator/store/testing/job_store_contract.h): creating a pod
// or a service shows it in Observe at once (the kube backend's expectations cover a lagging
// cache), creating twice is no error, deleting shows the pod gone or deleting, deleting what
// is not there is no error, Forget removes everything of the job. An implementation's test
// derives a fixture that says how to make a started backend and a stored job, then
// instantiates every case:
//
//   class LocalContractTest : public BackendContractTest {
//     std::unique_ptr<Backend> Init() override { ... }
//   };
//   COACH_BACKEND_CONTRACT_TESTS(LocalContractTest)
//
// It runs against the local backend (real processes), and the kube backend on the fake
// Kubernetes client and on a real API server. Pod phases are not compared: processes run,
// pods on an API server without a kubelet stay Pending.

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "operator/backend/backend.h"
#include "operator/model/reconcile_types.h"

namespace coach::backend::testing {

class BackendContractTest : public ::testing::Test {
 protected:
  // A started backend. Null fails the test. A fixture that may skip (no API server)
  // overrides SetUp and calls GTEST_SKIP() before the base's SetUp.
  virtual std::unique_ptr<Backend> Init() = 0;
  // The namespace the cases' jobs live in (empty of them at the start).
  virtual std::string Ns() const { return "ns"; }
  // `job` as its store holds it (a uid; the local backend admits only stored jobs, pods on
  // an API server are garbage-collected unless their owner exists). Default: as is.
  virtual model::Job Stored(model::Job job) { return job; }
  // How long a deletion may take to show.
  virtual absl::Duration Patience() const { return absl::Seconds(20); }

  void SetUp() override;
  void TearDown() override;

  // A PyTorchJob "<name>" with one Master and one Worker whose container sleeps, stored
  // and admitted; forgotten at the end of the case.
  model::Job Job(const std::string& name);
  model::KubeObject Pod(const model::Job& job, const std::string& type, int index);
  model::KubeObject Service(const model::Job& job, const std::string& type, int index);
  absl::Status Create(const model::Job& job, const model::KubeObject& object);
  absl::Status Delete(const model::Job& job, const std::string& kind, const std::string& name);
  model::ObservedState Observe(const model::Job& job);
  // Polls Observe until `done` holds or Patience() passes; the last observation.
  bool Eventually(const model::Job& job,
                  const std::function<bool(const model::ObservedState&)>& done);

  // The cases (backend_contract.cc).
  void ObserveOfAJobWithNothingIsEmpty();
  void CreatedPodIsObservedAtOnceWithTypeAndIndex();
  void CreatingTwiceIsNoError();
  void CreatedServiceIsObserved();
  void DeletedPodIsGoneOrDeleting();
  void DeletingWhatIsNotThereIsNoError();
  void ForgetRemovesEverything();
  void JobsDoNotSeeEachOther();

  std::unique_ptr<Backend> backend_;
  std::vector<model::Job> jobs_;
};

#define COACH_BACKEND_CONTRACT_CASE(Fixture, Case) \
  TEST_F(Fixture, Case) { Case(); }

#define COACH_BACKEND_CONTRACT_TESTS(Fixture)                                      \
  COACH_BACKEND_CONTRACT_CASE(Fixture, ObserveOfAJobWithNothingIsEmpty)            \
  COACH_BACKEND_CONTRACT_CASE(Fixture, CreatedPodIsObservedAtOnceWithTypeAndIndex) \
  COACH_BACKEND_CONTRACT_CASE(Fixture, CreatingTwiceIsNoError)                     \
  COACH_BACKEND_CONTRACT_CASE(Fixture, CreatedServiceIsObserved)                   \
  COACH_BACKEND_CONTRACT_CASE(Fixture, DeletedPodIsGoneOrDeleting)                 \
  COACH_BACKEND_CONTRACT_CASE(Fixture, DeletingWhatIsNotThereIsNoError)            \
  COACH_BACKEND_CONTRACT_CASE(Fixture, ForgetRemovesEverything)                    \
  COACH_BACKEND_CONTRACT_CASE(Fixture, JobsDoNotSeeEachOther)

}  // namespace coach::backend::testing
