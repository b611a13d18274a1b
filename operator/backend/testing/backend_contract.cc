#include "operator/backend/testing/backend_contract.h"

#include <algorithm>

#include "absl/time/clock.h"
#include "operator/model/testing/job_builder.h"
#include "operator/reconcile/desired_objects.h"

namespace coach::backend::testing {
namespace {

constexpr char kSleeper[] =
    R"({"spec":{"containers":[{"name":"pytorch","image":"coach.local/none",)"
    R"("command":["/bin/sh","-c","sleep 300"],)"
    R"("ports":[{"name":"pytorchjob-port","containerPort":23456}]}]}})";

const model::ObservedPod* FindPod(const model::ObservedState& s, const std::string& name) {
  for (const model::ObservedPod& p : s.pods) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

bool HasObject(const model::ObservedState& s, const std::string& kind, const std::string& name) {
  return std::any_of(s.objects.begin(), s.objects.end(),
                     [&](const auto& o) { return o.kind == kind && o.name == name; });
}

// Nothing of the job is left but pods on their way out.
bool Empty(const model::ObservedState& s) {
  return s.objects.empty() && std::all_of(s.pods.begin(), s.pods.end(),
                                          [](const model::ObservedPod& p) { return p.deleting; });
}

}  // namespace

void BackendContractTest::SetUp() {
  backend_ = Init();
  ASSERT_NE(backend_, nullptr);
}

void BackendContractTest::TearDown() {
  if (backend_ == nullptr) return;
  for (const model::Job& job : jobs_) EXPECT_TRUE(backend_->Forget(job).ok());
  backend_->Stop();
}

model::Job BackendContractTest::Job(const std::string& name) {
  model::Job job = Stored(reconcile::testing::MakePyTorchJob(Ns(), name)
                              .Master(1)
                              .Workers(1)
                              .RestartPolicy("Never")
                              .Template("Master", kSleeper)
                              .Template("Worker", kSleeper)
                              .Build());
  EXPECT_TRUE(backend_->Admit(job).ok());
  jobs_.push_back(job);
  return job;
}

model::KubeObject BackendContractTest::Pod(const model::Job& job, const std::string& type,
                                           int index) {
  model::ReconcileConfig config;
  config.address_plan = backend_->AddressPlanFor(job);
  absl::StatusOr<model::KubeObject> pod = reconcile::DesiredPod(job, type, index, config);
  EXPECT_TRUE(pod.ok()) << pod.status();
  return pod.ok() ? *pod : model::KubeObject();
}

model::KubeObject BackendContractTest::Service(const model::Job& job, const std::string& type,
                                               int index) {
  absl::StatusOr<model::KubeObject> service = reconcile::DesiredService(job, type, index);
  EXPECT_TRUE(service.ok()) << service.status();
  return service.ok() ? *service : model::KubeObject();
}

absl::Status BackendContractTest::Create(const model::Job& job, const model::KubeObject& object) {
  return backend_->Apply(job, model::Action{model::Action::Type::kCreate, object});
}

absl::Status BackendContractTest::Delete(const model::Job& job, const std::string& kind,
                                         const std::string& name) {
  model::KubeObject object;
  object.kind = kind;
  object.name = name;
  object.namespace_ = job.metadata().namespace_();
  return backend_->Apply(job, model::Action{model::Action::Type::kDelete, object});
}

model::ObservedState BackendContractTest::Observe(const model::Job& job) {
  absl::StatusOr<model::ObservedState> observed = backend_->Observe(job);
  EXPECT_TRUE(observed.ok()) << observed.status();
  return observed.ok() ? *observed : model::ObservedState();
}

bool BackendContractTest::Eventually(const model::Job& job,
                                     const std::function<bool(const model::ObservedState&)>& done) {
  const absl::Time deadline = absl::Now() + Patience();
  while (absl::Now() < deadline) {
    if (done(Observe(job))) return true;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return done(Observe(job));
}

void BackendContractTest::ObserveOfAJobWithNothingIsEmpty() {
  const model::Job job = Job("empty");
  const model::ObservedState observed = Observe(job);
  EXPECT_TRUE(observed.pods.empty());
  EXPECT_TRUE(observed.objects.empty());
}

void BackendContractTest::CreatedPodIsObservedAtOnceWithTypeAndIndex() {
  const model::Job job = Job("pod");
  const model::KubeObject pod = Pod(job, "Master", 0);
  ASSERT_TRUE(Create(job, pod).ok());
  // At once: a reconcile right after the create must not create it again.
  const model::ObservedState observed = Observe(job);
  ASSERT_EQ(observed.pods.size(), 1u);
  EXPECT_EQ(observed.pods[0].name, pod.name);
  EXPECT_EQ(observed.pods[0].replica_type, "Master");
  EXPECT_EQ(observed.pods[0].index, 0);
  EXPECT_FALSE(observed.pods[0].deleting);
}

void BackendContractTest::CreatingTwiceIsNoError() {
  const model::Job job = Job("twice");
  const model::KubeObject pod = Pod(job, "Worker", 0);
  ASSERT_TRUE(Create(job, pod).ok());
  EXPECT_TRUE(Create(job, pod).ok());
  EXPECT_EQ(Observe(job).pods.size(), 1u);
}

void BackendContractTest::CreatedServiceIsObserved() {
  const model::Job job = Job("svc");
  const model::KubeObject service = Service(job, "Master", 0);
  ASSERT_TRUE(Create(job, service).ok());
  EXPECT_TRUE(HasObject(Observe(job), "Service", service.name));
  EXPECT_TRUE(Observe(job).pods.empty());
}

void BackendContractTest::DeletedPodIsGoneOrDeleting() {
  const model::Job job = Job("del");
  const model::KubeObject pod = Pod(job, "Master", 0);
  ASSERT_TRUE(Create(job, pod).ok());
  ASSERT_TRUE(Delete(job, "Pod", pod.name).ok());
  EXPECT_TRUE(Eventually(job, [&](const model::ObservedState& s) {
    const model::ObservedPod* p = FindPod(s, pod.name);
    return p == nullptr || p->deleting;
  }));
}

void BackendContractTest::DeletingWhatIsNotThereIsNoError() {
  const model::Job job = Job("nothing");
  EXPECT_TRUE(Delete(job, "Pod", "nothing-master-0").ok());
  EXPECT_TRUE(Delete(job, "Service", "nothing-master-0").ok());
}

void BackendContractTest::ForgetRemovesEverything() {
  const model::Job job = Job("forget");
  ASSERT_TRUE(Create(job, Pod(job, "Master", 0)).ok());
  ASSERT_TRUE(Create(job, Pod(job, "Worker", 0)).ok());
  ASSERT_TRUE(Create(job, Service(job, "Master", 0)).ok());
  ASSERT_TRUE(backend_->Forget(job).ok());
  EXPECT_TRUE(Eventually(job, Empty));
  EXPECT_TRUE(backend_->Forget(job).ok());  // idempotent
}

void BackendContractTest::JobsDoNotSeeEachOther() {
  const model::Job a = Job("a");
  const model::Job b = Job("b");
  ASSERT_TRUE(Create(a, Pod(a, "Master", 0)).ok());
  EXPECT_EQ(Observe(a).pods.size(), 1u);
  EXPECT_TRUE(Observe(b).pods.empty());
}

}  // namespace coach::backend::testing
