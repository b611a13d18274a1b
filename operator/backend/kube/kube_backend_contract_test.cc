// The Backend contract (operator/backend/testing/backend_contract.h) on the kube backend: on
// the fake Kubernetes client, and on a real API server (tools/testenv; no kubelet: pods stay
// Pending, which the contract does not look at). Skipped when the testenv is not built,
// failed under CI=true.

#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "operator/backend/kube/client/kube_client.h"
#include "operator/backend/kube/client/rest_kube_client.h"
#include "operator/backend/kube/kube_backend.h"
#include "operator/backend/kube/testing/fake_kube_client.h"
#include "operator/backend/kube/testing/testenv.h"
#include "operator/backend/testing/backend_contract.h"

namespace coach::backend::kube {
namespace {

namespace k8s = ::coach::kubeclient;
using nlohmann::json;

std::unique_ptr<Backend> StartedBackend(k8s::KubeClient* client, const std::string& ns) {
  KubeBackendOptions options;
  options.client = client;
  if (!ns.empty()) options.namespaces = {ns};
  auto backend = KubeBackend::Create(options);
  EXPECT_TRUE(backend.ok()) << backend.status();
  if (!backend.ok()) return nullptr;
  absl::Status started = (*backend)->Start();
  EXPECT_TRUE(started.ok()) << started;
  return started.ok() ? std::move(*backend) : nullptr;
}

class KubeOnFakeClientContractTest : public backend::testing::BackendContractTest {
 protected:
  std::unique_ptr<Backend> Init() override { return StartedBackend(&fake_, ""); }
  model::Job Stored(model::Job job) override {
    job.mutable_metadata()->set_uid(absl::StrCat("uid-", job.metadata().name()));
    return job;
  }

  k8s::testing::FakeKubeClient fake_;
};

COACH_BACKEND_CONTRACT_TESTS(KubeOnFakeClientContractTest)

class KubeOnApiServerContractTest : public backend::testing::BackendContractTest {
 protected:
  static void SetUpTestSuite() {
    auto env = k8s::testing::TestEnv::Start();
    if (!env.ok()) {
      status_ = env.status();
      return;
    }
    env_ = std::move(*env);
    k8s::RestKubeClientOptions o;
    o.qps = 200;
    o.burst = 400;
    auto client = env_->NewClient(o);
    if (!client.ok()) {
      status_ = client.status();
      return;
    }
    client_ = std::move(*client);
    status_ = env_->ApplyCoachCrds();
  }
  static void TearDownTestSuite() {
    client_.reset();
    env_.reset();
  }

  void SetUp() override {
    if (!status_.ok()) {
      if (absl::IsNotFound(status_) && !k8s::testing::InCi()) GTEST_SKIP() << status_;
      FAIL() << status_;
    }
    static std::mt19937_64 rng(std::random_device{}());
    ns_ = absl::StrCat("bc-", rng() % 1000000000);
    auto created =
        client_->Create(k8s::resources::Namespaces(), "", {{"metadata", {{"name", ns_}}}});
    ASSERT_TRUE(created.ok()) << created.status();
    BackendContractTest::SetUp();
  }
  void TearDown() override {
    BackendContractTest::TearDown();
    if (client_ != nullptr && !ns_.empty()) {
      (void)client_->Delete(k8s::resources::Namespaces(), "", ns_, {});
    }
  }

  std::unique_ptr<Backend> Init() override { return StartedBackend(client_.get(), ns_); }
  std::string Ns() const override { return ns_; }
  // The job's CR exists, so that its pods' ownerReference names a real uid (else the garbage
  // collector removes them as orphans).
  model::Job Stored(model::Job job) override {
    const json replica = {
        {"replicas", 1},
        {"template",
         {{"spec", {{"containers", {{{"name", "pytorch"}, {"image", "coach.local/none"}}}}}}}}};
    const json cr = {
        {"apiVersion", "kubeflow.org/v1"},
        {"kind", "PyTorchJob"},
        {"metadata", {{"name", job.metadata().name()}, {"namespace", ns_}}},
        {"spec", {{"pytorchReplicaSpecs", {{"Master", replica}, {"Worker", replica}}}}}};
    auto created = client_->Create(k8s::resources::Kubeflow("pytorchjobs", "PyTorchJob"), ns_, cr);
    EXPECT_TRUE(created.ok()) << created.status();
    if (created.ok()) job.mutable_metadata()->set_uid(k8s::UidOf(*created));
    return job;
  }
  absl::Duration Patience() const override { return absl::Seconds(60); }

  static std::unique_ptr<k8s::testing::TestEnv> env_;
  static std::unique_ptr<k8s::RestKubeClient> client_;
  static absl::Status status_;
  std::string ns_;
};

std::unique_ptr<k8s::testing::TestEnv> KubeOnApiServerContractTest::env_;
std::unique_ptr<k8s::RestKubeClient> KubeOnApiServerContractTest::client_;
absl::Status KubeOnApiServerContractTest::status_;

COACH_BACKEND_CONTRACT_TESTS(KubeOnApiServerContractTest)

}  // namespace
}  // namespace coach::backend::kube
