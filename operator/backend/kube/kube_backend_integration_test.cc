// KubeBackend against a real control plane (tools/testenv: kube-apiserver, GC, scheduler,
// kwok nodes whose pods exit on the coach.test/exit-code annotation). Skipped when the
// testenv binaries are not built, failed under CI=true.
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/testing/eventually.h"
#include "gtest/gtest.h"
#include "operator/backend/kube/client/kube_config.h"
#include "operator/backend/kube/client/rest_kube_client.h"
#include "operator/backend/kube/kube_backend.h"
#include "operator/backend/kube/testing/testenv.h"
#include "operator/model/replicas.h"
#include "operator/model/testing/job_builder.h"
#include "operator/reconcile/plan_job.h"

namespace coach::backend::kube {
namespace {

namespace k8s = ::coach::kubeclient;
using nlohmann::json;

bool Eventually(const std::function<bool()>& cond, absl::Duration timeout = absl::Seconds(60)) {
  return ::coach::testing::Eventually(cond, timeout);
}

const model::ObservedPod* FindPod(const model::ObservedState& s, const std::string& name) {
  for (const auto& p : s.pods) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

class KubeBackendIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { status_ = StartReal(); }
  static void TearDownTestSuite() {
    client_.reset();
    env_.reset();
  }

  static absl::Status StartReal() {
    auto e = k8s::testing::TestEnv::Start();
    if (!e.ok()) return e.status();
    env_ = std::move(*e);
    k8s::RestKubeClientOptions o;
    o.qps = 200;
    o.burst = 400;
    auto c = env_->NewClient(o);
    if (!c.ok()) return c.status();
    client_ = std::move(*c);
    return env_->ApplyCoachCrds();
  }

  void SetUp() override {
    if (!status_.ok()) {
      if (absl::IsNotFound(status_) && !k8s::testing::InCi()) GTEST_SKIP() << status_;
      FAIL() << status_;
    }
    static std::mt19937_64 rng(std::random_device{}());
    ns_ = absl::StrCat("kb-", rng() % 1000000000);
    auto created =
        client_->Create(k8s::resources::Namespaces(), "", {{"metadata", {{"name", ns_}}}});
    ASSERT_TRUE(created.ok()) << created.status();
    // Pods need the namespace's default ServiceAccount (made by the controller-manager).
    const k8s::ResourceDescriptor sa{"", "v1", "serviceaccounts", "ServiceAccount", true, false};
    ASSERT_TRUE(Eventually([&] { return client_->Get(sa, ns_, "default").ok(); }));
  }

  void TearDown() override {
    if (backend_) backend_->Stop();
    if (client_ != nullptr && !ns_.empty())
      (void)client_->Delete(k8s::resources::Namespaces(), "", ns_, {});
  }

  // A backend on the test's namespace that counts change callbacks per job, started.
  void StartBackend() {
    KubeBackendOptions options;
    options.client = client_.get();
    options.namespaces = {ns_};
    auto b = KubeBackend::Create(options);
    ASSERT_TRUE(b.ok()) << b.status();
    backend_ = std::move(*b);
    backend_->SetChangeCallback([this](const std::string& ns, const std::string& name) {
      std::lock_guard<std::mutex> l(mu_);
      ++changes_[ns + "/" + name];
    });
    ASSERT_TRUE(backend_->Start().ok());
  }

  int Changes(const std::string& key) {
    std::lock_guard<std::mutex> l(mu_);
    return changes_[key];
  }

  static std::unique_ptr<k8s::testing::TestEnv> env_;
  static std::unique_ptr<k8s::RestKubeClient> client_;
  static absl::Status status_;
  std::string ns_;
  std::unique_ptr<KubeBackend> backend_;
  std::mutex mu_;
  std::map<std::string, int> changes_;
};

std::unique_ptr<k8s::testing::TestEnv> KubeBackendIntegrationTest::env_;
std::unique_ptr<k8s::RestKubeClient> KubeBackendIntegrationTest::client_;
absl::Status KubeBackendIntegrationTest::status_;

TEST_F(KubeBackendIntegrationTest, CreatesObservesExitCodesAndForgets) {
  // The job CR itself, so that the pods' ownerReference names a real uid (else the garbage
  // collector removes them as orphans).
  const json replica = {
      {"replicas", 1},
      {"restartPolicy", "Never"},
      {"template",
       {{"spec", {{"containers", {{{"name", "pytorch"}, {"image", "coach.local/none"}}}}}}}}};
  json cr = {{"apiVersion", "kubeflow.org/v1"},
             {"kind", "PyTorchJob"},
             {"metadata", {{"name", "exits"}, {"namespace", ns_}}},
             {"spec", {{"pytorchReplicaSpecs", {{"Master", replica}, {"Worker", replica}}}}}};
  auto created_cr = client_->Create(k8s::resources::Kubeflow("pytorchjobs", "PyTorchJob"), ns_, cr);
  ASSERT_TRUE(created_cr.ok()) << created_cr.status();

  const std::string port = R"("ports":[{"name":"pytorchjob-port","containerPort":23456}])";
  const model::Job job =
      reconcile::testing::MakePyTorchJob(ns_, "exits")
          .Master(1)
          .Workers(1)
          .RestartPolicy("Never")
          .Uid(k8s::UidOf(*created_cr))
          .Template("Master",
                    absl::StrCat(
                        R"({"spec":{"containers":[{"name":"pytorch","image":"coach.local/none",)",
                        port, "}]}}"))
          .Template(
              "Worker",
              absl::StrCat(
                  R"({"metadata":{"annotations":{"coach.test/exit-code":"3","coach.test/run-seconds":"2"}},)",
                  R"("spec":{"containers":[{"name":"pytorch","image":"coach.local/none",)", port,
                  "}]}}"))
          .Build();

  ASSERT_NO_FATAL_FAILURE(StartBackend());
  const std::string key = ns_ + "/exits";

  auto objects = reconcile::DesiredObjects(job, {});
  ASSERT_TRUE(objects.ok()) << objects.status();
  std::vector<model::Action> actions;
  for (const auto& o : *objects) actions.push_back({model::Action::Type::kCreate, o});
  ASSERT_EQ(actions.size(), 4u);  // 2 pods, 2 services
  // Counted from before the creates: under load the pods may already have run and exited
  // by the time the caches are checked below.
  const int before = Changes(key);
  std::vector<absl::Status> results;
  absl::Status applied = backend_->ApplyAll(job, actions, &results);
  ASSERT_TRUE(applied.ok()) << applied;
  // Applying again (a retry after a crash) is fine: AlreadyExists is success.
  ASSERT_TRUE(backend_->ApplyAll(job, actions).ok());

  // The caches see the pods and services; expectations are met by the watch.
  ASSERT_TRUE(Eventually([&] {
    return backend_->PendingExpectations(ns_, "exits").empty() &&
           backend_->CachedCount("Pod") == 2 && backend_->CachedCount("Service") == 2;
  })) << "pods "
      << backend_->CachedCount("Pod") << ", services " << backend_->CachedCount("Service")
      << ", pending " << backend_->PendingExpectations(ns_, "exits").size();
  auto observed = backend_->Observe(job);
  ASSERT_TRUE(observed.ok()) << observed.status();
  ASSERT_EQ(observed->pods.size(), 2u);
  EXPECT_EQ(observed->objects.size(), 2u);
  EXPECT_EQ(observed->pods[0].name, "exits-master-0");
  EXPECT_EQ(observed->pods[0].replica_type, "Master");
  EXPECT_EQ(observed->pods[1].replica_type, "Worker");
  EXPECT_GT(observed->pods[0].created, absl::Now() - absl::Minutes(5));

  // kwok runs both; the worker exits with 3 after ~2 s, the master keeps running.
  ASSERT_TRUE(Eventually([&] {
    auto o = backend_->Observe(job);
    if (!o.ok()) return false;
    const model::ObservedPod* w = FindPod(*o, "exits-worker-0");
    const model::ObservedPod* m = FindPod(*o, "exits-master-0");
    return w != nullptr && m != nullptr && w->phase == model::PodPhase::kFailed &&
           w->exit_code == 3 && m->phase == model::PodPhase::kRunning;
  })) << "pods never reached Failed(3)/Running";
  EXPECT_GT(Changes(key),
            before + 1);  // created, scheduled, running, exited: each reconciles the job
  auto o = backend_->Observe(job);
  EXPECT_FALSE(FindPod(*o, "exits-master-0")->exit_code.has_value());
  EXPECT_EQ(FindPod(*o, "exits-worker-0")->restart_count, 0);

  // Logs: kwok nodes have no kubelet, so the apiserver cannot fetch them; the user gets its
  // error, mapped and prefixed with the pod.
  std::atomic<bool> cancelled{false};
  LogOptions lo;
  lo.replica = "master-0";
  absl::Status logs = backend_->StreamLogs(
      job, lo, [](const std::string&, const std::string&) { return true; }, cancelled);
  spdlog::info("logs of a kwok pod: {}", logs.ToString());
  EXPECT_TRUE(absl::IsUnavailable(logs)) << logs;
  EXPECT_TRUE(absl::StrContains(logs.message(), "logs of pod exits-master-0 are not available"))
      << logs;
  lo.replica = "worker-9";
  EXPECT_TRUE(absl::IsNotFound(backend_->StreamLogs(
      job, lo, [](const std::string&, const std::string&) { return true; }, cancelled)));

  // Forget deletes the pods and services; the caches follow.
  ASSERT_TRUE(backend_->Forget(job).ok());
  ASSERT_TRUE(Eventually([&] {
    auto pods = client_->List(k8s::resources::Pods(), ns_, {});
    auto svcs = client_->List(k8s::resources::Services(), ns_, {});
    return pods.ok() && svcs.ok() && pods->items.empty() && svcs->items.empty();
  }));
  // Pods and Services come through watches of their own: either cache may see its deletion
  // first.
  ASSERT_TRUE(Eventually([&] {
    absl::StatusOr<model::ObservedState> o = backend_->Observe(job);
    return o.ok() && o->pods.empty() && o->objects.empty();
  }));
  EXPECT_TRUE(backend_->Forget(job).ok());
}

// A node that stops reporting and then disappears, with no kubelet to finish its pods'
// deletion (a Node this test makes: the testenv's pod finalizer plays the kubelet of kwok's
// nodes only). The pods tolerate the node's NoExecute taints for ever, so that taint eviction
// stays out of it.
// Upstream's training-operator made these (its labels only); the leader's start labels them for
// the one watch, with a conditional merge patch the real API server accepts.
TEST_F(KubeBackendIntegrationTest, AnEarlierOperatorsPodsAndServicesAreTakenOverAtStart) {
  const json labels = {{reconcile::kLabelOperatorName, "pytorchjob-controller"},
                       {reconcile::kLabelJobName, "old"},
                       {reconcile::kLabelReplicaType, "worker"},
                       {reconcile::kLabelReplicaIndex, "0"}};
  const json pod = {
      {"metadata", {{"name", "old-worker-0"}, {"labels", labels}}},
      {"spec", {{"containers", {{{"name", "pytorch"}, {"image", "coach.local/none"}}}}}}};
  ASSERT_TRUE(client_->Create(k8s::resources::Pods(), ns_, pod).ok());
  const json service = {{"metadata", {{"name", "old-worker-0"}, {"labels", labels}}},
                        {"spec", {{"clusterIP", "None"}, {"selector", labels}}}};
  ASSERT_TRUE(client_->Create(k8s::resources::Services(), ns_, service).ok());

  ASSERT_NO_FATAL_FAILURE(StartBackend());

  const model::Job job = reconcile::testing::MakePyTorchJob(ns_, "old").Workers(1).Build();
  auto observed = backend_->Observe(job);
  ASSERT_TRUE(observed.ok()) << observed.status();
  ASSERT_EQ(observed->pods.size(), 1u);
  EXPECT_EQ(observed->pods[0].replica_type, "Worker");
  EXPECT_EQ(observed->pods[0].index, 0);
  for (const auto& resource : {k8s::resources::Pods(), k8s::resources::Services()}) {
    auto got = client_->Get(resource, ns_, "old-worker-0");
    ASSERT_TRUE(got.ok()) << got.status();
    const json& have = (*got)["metadata"]["labels"];
    EXPECT_EQ(have.value("coach.dev/job-name", ""), "old") << resource.kind;
    for (const auto& [key, value] : labels.items()) {
      EXPECT_EQ(have.value(key, ""), value) << resource.kind << " " << key;  // upstream's stay
    }
  }
}

TEST_F(KubeBackendIntegrationTest, LostNodesAndForceDelete) {
  const std::string node = "lost-" + ns_;
  auto made = client_->Create(k8s::resources::Nodes(), "", {{"metadata", {{"name", node}}}});
  ASSERT_TRUE(made.ok()) << made.status();
  struct DeleteNode {
    k8s::KubeClient* client;
    std::string name;
    ~DeleteNode() { (void)client->Delete(k8s::resources::Nodes(), "", name, {}); }
  } delete_node{client_.get(), node};
  auto set_ready = [&](const std::string& status) {
    const json patch = {{"status",
                         {{"conditions",
                           {{{"type", "Ready"},
                             {"status", status},
                             {"reason", "CoachTest"},
                             {"message", "set by kube_backend_integration_test"}}}}}}};
    auto patched =
        client_->PatchStatus(k8s::resources::Nodes(), "", node, k8s::PatchType::kMerge, patch);
    ASSERT_TRUE(patched.ok()) << patched.status();
  };
  set_ready("True");

  const model::Job job = reconcile::testing::MakePyTorchJob(ns_, "lost").Workers(2).Build();
  ASSERT_NO_FATAL_FAILURE(StartBackend());
  const std::string key = ns_ + "/lost";

  std::map<std::string, std::string> uids;
  for (int i = 0; i < 2; ++i) {
    const std::string name = absl::StrCat("lost-worker-", i);
    const json tolerate_forever = {
        {{"key", "node.kubernetes.io/not-ready"}, {"operator", "Exists"}, {"effect", "NoExecute"}},
        {{"key", "node.kubernetes.io/unreachable"},
         {"operator", "Exists"},
         {"effect", "NoExecute"}}};
    const json pod = {{"metadata",
                       {{"name", name},
                        {"labels",
                         {{reconcile::kLabelOperatorName, "pytorchjob-controller"},
                          {reconcile::kLabelJobName, "lost"},
                          {reconcile::kLabelReplicaType, "worker"},
                          {reconcile::kLabelReplicaIndex, absl::StrCat(i)},
                          {"coach.dev/job-name", "lost"},
                          {"coach.dev/attempt", "2"}}}}},
                      {"spec",
                       {{"nodeName", node},
                        {"terminationGracePeriodSeconds", 30},
                        {"tolerations", tolerate_forever},
                        {"containers", {{{"name", "pytorch"}, {"image", "coach.local/none"}}}}}}};
    auto created = client_->Create(k8s::resources::Pods(), ns_, pod);
    ASSERT_TRUE(created.ok()) << created.status();
    uids[name] = k8s::UidOf(*created);
  }
  auto observed = [&](const std::string& name) -> std::optional<model::ObservedPod> {
    auto o = backend_->Observe(job);
    if (!o.ok()) return std::nullopt;
    const model::ObservedPod* p = FindPod(*o, name);
    if (p == nullptr) return std::nullopt;
    return *p;
  };
  ASSERT_TRUE(Eventually([&] { return observed("lost-worker-1").has_value(); }));
  EXPECT_FALSE(observed("lost-worker-0")->node_lost);
  EXPECT_EQ(observed("lost-worker-0")->attempt, 2);
  EXPECT_EQ(observed("lost-worker-0")->disruption, "");

  // NotReady: both pods are on a lost node, and their job hears of it.
  const int before = Changes(key);
  set_ready("False");
  ASSERT_TRUE(Eventually([&] {
    auto w0 = observed("lost-worker-0");
    auto w1 = observed("lost-worker-1");
    return w0 && w1 && w0->node_lost && w1->node_lost;
  })) << "node_lost never turned true with the node NotReady";
  EXPECT_GT(Changes(key), before);

  // A graceful delete: without a kubelet the pod stays, deleting since the request.
  const absl::Time asked = absl::Now();
  k8s::DeleteOptions graceful;
  graceful.precondition_uid = uids["lost-worker-0"];
  ASSERT_TRUE(client_->Delete(k8s::resources::Pods(), ns_, "lost-worker-0", graceful).ok());
  ASSERT_TRUE(Eventually([&] {
    auto w0 = observed("lost-worker-0");
    return w0 && w0->deleting;
  }));
  const model::ObservedPod terminating = *observed("lost-worker-0");
  EXPECT_GE(terminating.deletion_requested, asked - absl::Seconds(5));
  EXPECT_LE(terminating.deletion_requested, absl::Now() + absl::Seconds(5));
  EXPECT_TRUE(terminating.node_lost);
  absl::SleepFor(absl::Seconds(2));
  auto still = client_->Get(k8s::resources::Pods(), ns_, "lost-worker-0");
  ASSERT_TRUE(still.ok()) << "a pod on a node without a kubelet went away by itself: "
                          << still.status();

  // The reconciler's force delete removes it at once.
  model::Action force{
      model::Action::Type::kDelete,
      {"v1", "Pod", "lost-worker-0", ns_, {{"metadata", {{"uid", uids["lost-worker-0"]}}}}}};
  force.force = true;
  absl::Status forced = backend_->Apply(job, force);
  ASSERT_TRUE(forced.ok()) << forced;
  EXPECT_TRUE(
      absl::IsNotFound(client_->Get(k8s::resources::Pods(), ns_, "lost-worker-0").status()));
  ASSERT_TRUE(Eventually([&] { return !observed("lost-worker-0").has_value(); }));

  // Ready again, then deleted: lost again, because it is gone.
  set_ready("True");
  ASSERT_TRUE(Eventually([&] {
    auto w1 = observed("lost-worker-1");
    return w1 && !w1->node_lost;
  }));
  ASSERT_TRUE(client_->Delete(k8s::resources::Nodes(), "", node, {}).ok());
  ASSERT_TRUE(Eventually([&] {
    auto w1 = observed("lost-worker-1");
    return w1 && w1->node_lost;
  })) << "node_lost never turned true with the node deleted";

  // Nothing would finish the last pod's deletion (the pod GC would, some time after the
  // node went): so that the namespace can go, it goes at once too.
  k8s::DeleteOptions at_once;
  at_once.grace_period_seconds = 0;
  (void)client_->Delete(k8s::resources::Pods(), ns_, "lost-worker-1", at_once);
}

}  // namespace
}  // namespace coach::backend::kube
