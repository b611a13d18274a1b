// Progress reports against a real control plane (tools/testenv): a pod-bound token of audience
// "coach", as the kubelet would project it (TokenRequest with the pod as bound object), is
// reviewed by kube-apiserver with the pod's name and UID in user.extra; the intake accepts it for
// that pod alone, and KubeBackend::Observe hands the report on. Skipped when the testenv binaries
// are not built, failed under CI=true.

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/testing/eventually.h"
#include "operator/backend/kube/client/rest_kube_client.h"
#include "operator/backend/kube/kube_backend.h"
#include "operator/backend/kube/testing/testenv.h"
#include "operator/model/replicas.h"
#include "operator/model/testing/job_builder.h"
#include "operator/server/pod_token_auth.h"
#include "operator/server/progress_intake.h"
#include "operator/server/progress_token.h"

namespace coach::server {
namespace {

namespace k8s = ::coach::kubeclient;
using nlohmann::json;

class ProgressReportIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto e = k8s::testing::TestEnv::Start();
    if (!e.ok()) {
      status_ = e.status();
      return;
    }
    env_ = std::move(*e);
    auto c = env_->NewClient();
    status_ = c.status();
    if (c.ok()) client_ = std::move(*c);
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
    ns_ = absl::StrCat("pr-", rng() % 1000000000);
    ASSERT_TRUE(
        client_->Create(k8s::resources::Namespaces(), "", {{"metadata", {{"name", ns_}}}}).ok());
    const k8s::ResourceDescriptor sa{"", "v1", "serviceaccounts", "ServiceAccount", true, false};
    ASSERT_TRUE(::coach::testing::Eventually([&] { return client_->Get(sa, ns_, "default").ok(); },
                                             absl::Seconds(60)));
  }
  void TearDown() override {
    if (client_ != nullptr && !ns_.empty()) {
      (void)client_->Delete(k8s::resources::Namespaces(), "", ns_, {});
    }
  }

  // A replica pod of job `job`, as the reconciler labels one; its UID.
  std::string CreatePod(const std::string& name, const std::string& job) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", name},
                  {"namespace", ns_},
                  {"labels",
                   {{reconcile::kLabelOperatorName, "pytorchjob-controller"},
                    {reconcile::kLabelJobName, job},
                    {reconcile::kLabelReplicaType, "worker"},
                    {reconcile::kLabelReplicaIndex, "0"}}}}},
                {"spec", {{"containers", {{{"name", "pytorch"}, {"image", "coach.local/none"}}}}}}};
    auto created = client_->Create(k8s::resources::Pods(), ns_, pod);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? k8s::UidOf(*created) : "";
  }

  // What the kubelet mounts for a projected serviceAccountToken source: a TokenRequest bound to
  // the pod.
  std::string PodToken(const std::string& pod, const std::string& audience) {
    std::string out;
    const int rc = k8s::testing::RunShell(
        absl::StrCat(env_->kubectl(), " -n ", ns_, " create token default --audience ", audience,
                     " --duration 1h --bound-object-kind Pod --bound-object-name ", pod),
        &out);
    EXPECT_EQ(rc, 0) << out;
    return std::string(absl::StripAsciiWhitespace(out));
  }

  static api::v1::ReportProgressRequest Request(const std::string& ns, const std::string& pod,
                                                int64_t step) {
    api::v1::ReportProgressRequest r;
    r.set_namespace_(ns);
    r.set_pod(pod);
    r.set_step(step);
    (*r.mutable_metrics())["loss"] = 1.0 / static_cast<double>(step);
    return r;
  }

  static std::unique_ptr<k8s::testing::TestEnv> env_;
  static std::unique_ptr<k8s::RestKubeClient> client_;
  static absl::Status status_;
  std::string ns_;
};

std::unique_ptr<k8s::testing::TestEnv> ProgressReportIntegrationTest::env_;
std::unique_ptr<k8s::RestKubeClient> ProgressReportIntegrationTest::client_;
absl::Status ProgressReportIntegrationTest::status_;

TEST_F(ProgressReportIntegrationTest, AProjectedTokenNamesItsPodAndReportsReachObserve) {
  const std::string uid = CreatePod("ddp-worker-0", "ddp");
  const std::string other_uid = CreatePod("ddp-worker-1", "ddp");
  ASSERT_FALSE(uid.empty());

  // The review itself: pod name and UID in user.extra, for the audience asked.
  const std::string token = PodToken("ddp-worker-0", kProgressAudience);
  EXPECT_TRUE(IsProgressToken(token));
  PodTokenAuth auth(client_.get());
  const std::string header = "Bearer " + token;
  absl::StatusOr<PodIdentity> who = auth.Authenticate(&header);
  ASSERT_TRUE(who.ok()) << who.status();
  EXPECT_EQ(who->namespace_, ns_);
  EXPECT_EQ(who->service_account, "default");
  EXPECT_EQ(who->pod_name, "ddp-worker-0");
  EXPECT_EQ(who->pod_uid, uid);

  // The pod's ordinary token (the API server's audience) is not one for coach.
  const std::string api_header =
      "Bearer " + PodToken("ddp-worker-0", "https://kubernetes.default.svc");
  EXPECT_TRUE(absl::IsUnauthenticated(auth.Authenticate(&api_header).status()));

  // Through the backend: accepted for itself, refused for its neighbour.
  backend::kube::KubeBackendOptions options;
  options.client = client_.get();
  options.namespaces = {ns_};
  auto backend = backend::kube::KubeBackend::Create(options);
  ASSERT_TRUE(backend.ok());
  ASSERT_TRUE((*backend)->Start().ok());
  ProgressIntake intake(&auth, backend->get());
  ASSERT_TRUE(::coach::testing::Eventually(
      [&] { return intake.Report(&header, Request(ns_, "ddp-worker-0", 5)).ok(); },
      absl::Seconds(30)));
  absl::Status neighbour = intake.Report(&header, Request(ns_, "ddp-worker-1", 5)).status();
  EXPECT_TRUE(absl::IsPermissionDenied(neighbour)) << neighbour;

  const model::Job job = reconcile::testing::MakePyTorchJob(ns_, "ddp").Workers(2).Build();
  absl::StatusOr<model::ObservedState> observed = (*backend)->Observe(job);
  ASSERT_TRUE(observed.ok()) << observed.status();
  bool found = false;
  for (const model::ObservedPod& p : observed->pods) {
    if (p.name != "ddp-worker-0") continue;
    found = true;
    ASSERT_TRUE(p.progress.has_value());
    EXPECT_EQ(p.progress->step, 5);
  }
  EXPECT_TRUE(found);

  // The pod goes: the backend forgets it and refuses its reports at once, whatever the intake
  // remembers; the API server stops authenticating its token too (after its own token cache,
  // about 10 s).
  ASSERT_TRUE(client_->Delete(k8s::resources::Pods(), ns_, "ddp-worker-0", {}).ok());
  ASSERT_TRUE(::coach::testing::Eventually([&] { return (*backend)->ProgressEntries() == 0; },
                                           absl::Seconds(30)));
  absl::Status gone = intake.Report(&header, Request(ns_, "ddp-worker-0", 6)).status();
  EXPECT_TRUE(absl::IsPermissionDenied(gone)) << gone;
  EXPECT_TRUE(::coach::testing::Eventually(
      [&] {
        PodTokenAuth fresh(client_.get());
        return absl::IsUnauthenticated(fresh.Authenticate(&header).status());
      },
      absl::Seconds(40), absl::Seconds(1)));
  (*backend)->Stop();
  (void)other_uid;
}

}  // namespace
}  // namespace coach::server
