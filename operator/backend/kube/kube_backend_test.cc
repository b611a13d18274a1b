// KubeBackend against FakeKubeClient, behind a gate that can hold or drop watch events
// (a lagging or lossy cache).
#include "operator/backend/kube/kube_backend.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/eventually.h"
#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"
#include "operator/backend/kube/client/errors.h"
#include "operator/backend/kube/ssh_auth_keys.h"
#include "operator/backend/kube/testing/fake_kube_client.h"
#include "operator/backend/kube/testing/forwarding_kube_client.h"
#include "operator/model/replicas.h"
#include "operator/model/testing/job_builder.h"
#include "operator/reconcile/desired_objects.h"
#include "operator/reconcile/reconciler.h"
#include "operator/reconcile/train_job_objects.h"

namespace coach::backend::kube {
namespace {

using coach::kubeclient::KubeClient;
using coach::kubeclient::ResourceDescriptor;
using coach::kubeclient::WatchEvent;
using coach::kubeclient::testing::FakeKubeClient;
using nlohmann::json;
namespace resources = coach::kubeclient::resources;

// Forwards to a FakeKubeClient; watch events of a held resource wait (lag), of a dropped
// resource vanish (as if the watch missed them).
class GatedClient : public coach::kubeclient::testing::ForwardingKubeClient {
 public:
  enum class Mode { kPass, kHold, kDrop };
  explicit GatedClient(FakeKubeClient* fake) : ForwardingKubeClient(fake) {}

  void SetMode(const std::string& plural, Mode mode) {
    std::lock_guard<std::mutex> l(mu_);
    modes_[plural] = mode;
    cv_.notify_all();
  }

  absl::Status Watch(const ResourceDescriptor& r, const std::string& ns,
                     const coach::kubeclient::WatchOptions& o,
                     const coach::kubeclient::WatchHandler& handler) override {
    const std::string plural = r.plural;
    return inner()->Watch(r, ns, o, [this, plural, handler, &o](const WatchEvent& e) {
      std::unique_lock<std::mutex> l(mu_);
      while (modes_[plural] == Mode::kHold && !(o.stop != nullptr && o.stop->load())) {
        cv_.wait_for(l, std::chrono::milliseconds(20));
      }
      if (modes_[plural] == Mode::kDrop) return true;
      l.unlock();
      return handler(e);
    });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Mode> modes_;
};

bool WaitFor(const std::function<bool()>& cond, absl::Duration timeout = absl::Seconds(10)) {
  return ::coach::testing::Eventually(cond, timeout, absl::Milliseconds(5));
}

const model::ObservedPod* FindPod(const model::ObservedState& s, const std::string& name) {
  for (const auto& p : s.pods) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

json MakePod(const std::string& ns, const std::string& job, const std::string& type, int index) {
  const std::string name = absl::StrCat(job, "-", type, "-", index);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", ns},
            {"labels",
             {{reconcile::kLabelOperatorName, "pytorchjob-controller"},
              {reconcile::kLabelJobName, job},
              {reconcile::kLabelReplicaType, type},
              {reconcile::kLabelReplicaIndex, absl::StrCat(index)},
              {"coach.dev/job-name", job}}}}},
          {"spec", {{"containers", {{{"name", "pytorch"}, {"image", "busybox"}}}}}}};
}

class KubeBackendTest : public ::testing::Test {
 protected:
  void SetUp() override { gated_ = std::make_unique<GatedClient>(&fake_); }
  void TearDown() override {
    for (const char* p : {"pods", "services", "configmaps", "serviceaccounts", "roles",
                          "rolebindings", "podgroups", "nodes"}) {
      gated_->SetMode(p, GatedClient::Mode::kPass);
    }
    if (backend_) backend_->Stop();
  }

  void StartBackend(KubeBackendOptions options = {}) {
    options.client = gated_.get();
    options.reflector.initial_backoff = absl::Milliseconds(10);
    auto b = KubeBackend::Create(std::move(options));
    ASSERT_TRUE(b.ok()) << b.status();
    backend_ = std::move(b).value();
    backend_->SetChangeCallback([this](const std::string& ns, const std::string& name) {
      std::lock_guard<std::mutex> l(cb_mu_);
      changes_.push_back(ns + "/" + name);
    });
    ASSERT_TRUE(backend_->Start().ok());
  }

  // One controller pass: Observe -> Reconcile -> ApplyAll. Returns the actions applied.
  std::vector<model::Action> Pass(const model::Job& job,
                                  const model::ReconcileConfig& config = {}) {
    absl::StatusOr<model::ObservedState> observed = backend_->Observe(job);
    EXPECT_TRUE(observed.ok()) << observed.status();
    if (!observed.ok()) return {};
    model::ReconcileResult result = reconcile::Reconcile(job, *observed, absl::Now(), config);
    std::vector<model::Action> actions;
    for (const auto& a : result.actions) {
      if (a.type != model::Action::Type::kDeleteJob) actions.push_back(a);
    }
    absl::Status applied = backend_->ApplyAll(job, actions);
    EXPECT_TRUE(applied.ok()) << applied;
    return actions;
  }

  int CreateCalls(const std::string& resource) const {
    int n = 0;
    for (const auto& c : fake_.calls("Create")) n += c.resource == resource;
    return n;
  }

  int Changes(const std::string& key) {
    std::lock_guard<std::mutex> l(cb_mu_);
    return static_cast<int>(std::count(changes_.begin(), changes_.end(), key));
  }

  FakeKubeClient fake_;
  std::unique_ptr<GatedClient> gated_;
  std::unique_ptr<KubeBackend> backend_;
  std::mutex cb_mu_;
  std::vector<std::string> changes_;
};

TEST_F(KubeBackendTest, CreateRejectsBadOptions) {
  EXPECT_TRUE(absl::IsInvalidArgument(KubeBackend::Create({}).status()));
  KubeBackendOptions o;
  o.client = &fake_;
  o.gang_scheduler = "kueue";
  EXPECT_TRUE(absl::IsInvalidArgument(KubeBackend::Create(o).status()));
  o.gang_scheduler = "";
  o.create_parallelism = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(KubeBackend::Create(o).status()));
}

TEST_F(KubeBackendTest, ObserveBeforeStartListsTheJobsOwnPodsFromTheServer) {
  KubeBackendOptions o;
  o.client = &fake_;
  auto b = KubeBackend::Create(o);
  ASSERT_TRUE(b.ok());
  const model::Job job = reconcile::testing::SeedPyTorchJob();
  const std::string& ns = job.metadata().namespace_();
  auto pod = [&](const std::string& name, const std::string& owner_uid) {
    nlohmann::json p = {{"apiVersion", "v1"},
                        {"kind", "Pod"},
                        {"metadata",
                         {{"name", name},
                          {"namespace", ns},
                          {"labels",
                           {{"coach.dev/job-name", job.metadata().name()},
                            {reconcile::kLabelJobName, job.metadata().name()},
                            {reconcile::kLabelReplicaType, "master"},
                            {reconcile::kLabelReplicaIndex, "0"}}},
                          {"ownerReferences", {{{"uid", owner_uid}, {"kind", "PyTorchJob"}}}}}}};
    ASSERT_TRUE(fake_.Create(resources::Pods(), ns, p).ok());
  };
  pod(job.metadata().name() + "-master-0", job.metadata().uid());
  // Same name label, another kind's job: not this job's pod.
  pod(job.metadata().name() + "-chief-0", "uid-of-a-tfjob");
  absl::StatusOr<model::ObservedState> observed = (*b)->Observe(job);
  ASSERT_TRUE(observed.ok()) << observed.status();
  ASSERT_EQ(observed->pods.size(), 1u);
  EXPECT_EQ(observed->pods[0].name, job.metadata().name() + "-master-0");
  EXPECT_EQ(observed->pods[0].replica_type, "Master");
  EXPECT_EQ(observed->pods[0].index, 0);
  EXPECT_EQ((*b)->Name(), "kube");
  EXPECT_EQ((*b)->AddressPlanFor(reconcile::testing::SeedPyTorchJob()), nullptr);
  EXPECT_TRUE((*b)->Admit(reconcile::testing::SeedPyTorchJob()).ok());
}

TEST_F(KubeBackendTest, ProgressReportsOfItsOwnPodsReachObserve) {
  FakeClock clock;
  KubeBackendOptions options;
  options.clock = &clock;
  PodReport early{"default", "pytorch-mnist-master-0", "uid", {}};
  {
    KubeBackendOptions o;
    o.client = &fake_;
    auto b = KubeBackend::Create(o);
    ASSERT_TRUE(b.ok());
    // A replica that does not lead has no caches: the report goes elsewhere.
    EXPECT_TRUE(absl::IsUnavailable((*b)->ReceiveProgress(early).status()));
  }
  StartBackend(options);
  model::Job job = reconcile::testing::SeedPyTorchJob();
  const std::string owner_uid = "job-uid-1";
  job.mutable_metadata()->set_uid(owner_uid);
  json replica = MakePod("default", "pytorch-mnist", "master", 0);
  replica["metadata"]["ownerReferences"] =
      json::array({{{"kind", "PyTorchJob"}, {"name", "pytorch-mnist"}, {"uid", owner_uid}}});
  auto created = fake_.Create(resources::Pods(), "default", replica);
  ASSERT_TRUE(created.ok());
  const std::string uid = (*created)["metadata"]["uid"];
  ASSERT_TRUE(WaitFor(
      [&] { return backend_->CachedCount("Pod") == 1 && Changes("default/pytorch-mnist") >= 1; }));
  const int changes_before = Changes("default/pytorch-mnist");

  PodReport report{"default", "pytorch-mnist-master-0", uid, {}};
  report.report.step = 42;
  report.report.metrics = {{"loss", 0.25}};
  report.report.steps_per_second = 3;
  absl::StatusOr<ProgressReceipt> accepted = backend_->ReceiveProgress(report);
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_TRUE(accepted->accepted);
  EXPECT_FALSE(accepted->launch.has_value());
  // The owner's uid, which keys the job's checkpoint requests.
  EXPECT_EQ(accepted->job_uid, owner_uid);
  // The job is asked for a pass.
  EXPECT_EQ(Changes("default/pytorch-mnist"), changes_before + 1);
  // Within the second: dropped, without an error.
  report.report.step = 43;
  accepted = backend_->ReceiveProgress(report);
  ASSERT_TRUE(accepted.ok());
  EXPECT_FALSE(accepted->accepted);
  // A job that restarts in place: its directive answers every report of its pods, and the
  // launcher's state reaches Observe.
  backend_->DirectLaunchers(job, model::LaunchDirective{1, false, false});
  report.report.launch =
      model::ObservedPod::Launch{0, model::ObservedPod::Launch::Phase::kFailed, 9};
  report.report.heartbeat = true;
  clock.Advance(absl::Milliseconds(100));
  accepted = backend_->ReceiveProgress(report);
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_TRUE(accepted->accepted);
  ASSERT_TRUE(accepted->launch.has_value());
  EXPECT_EQ(accepted->launch->attempt, 1);
  EXPECT_FALSE(accepted->launch->start);
  report.report.launch.reset();
  report.report.heartbeat = false;

  absl::StatusOr<model::ObservedState> observed = backend_->Observe(job);
  ASSERT_TRUE(observed.ok());
  const model::ObservedPod* pod = FindPod(*observed, "pytorch-mnist-master-0");
  ASSERT_NE(pod, nullptr);
  ASSERT_TRUE(pod->progress.has_value());
  EXPECT_EQ(pod->progress->step, 42);
  EXPECT_EQ(pod->progress->metrics.at("loss"), 0.25);
  EXPECT_EQ(pod->progress->time, clock.Now() - absl::Milliseconds(100));
  EXPECT_EQ(observed->progress_since, clock.Now() - absl::Milliseconds(100));
  ASSERT_TRUE(pod->launch.has_value());
  EXPECT_EQ(pod->launch->exit_code, 9);

  // Another instance of that name, or a pod the operator does not run: refused.
  PodReport other = report;
  other.pod_uid = "another-uid";
  EXPECT_TRUE(absl::IsPermissionDenied(backend_->ReceiveProgress(other).status()));
  other = report;
  other.pod = "not-a-replica";
  absl::Status refused = backend_->ReceiveProgress(other).status();
  EXPECT_TRUE(absl::IsPermissionDenied(refused)) << refused;
  EXPECT_NE(refused.message().find("default/not-a-replica"), std::string::npos);

  backend_->DirectLaunchers(job, std::nullopt);
  report.report.step = 50;
  clock.Advance(absl::Seconds(2));
  accepted = backend_->ReceiveProgress(report);
  ASSERT_TRUE(accepted.ok());
  EXPECT_FALSE(accepted->launch.has_value());

  // The pod goes, and its entry with it.
  EXPECT_EQ(backend_->ProgressEntries(), 1u);
  ASSERT_TRUE(fake_.Delete(resources::Pods(), "default", "pytorch-mnist-master-0", {}).ok());
  ASSERT_TRUE(WaitFor([&] { return backend_->ProgressEntries() == 0; }));
}

TEST_F(KubeBackendTest, ProgressBookIsBounded) {
  KubeBackendOptions options;
  options.progress.max_pods = 1;
  StartBackend(options);
  std::vector<std::string> uids;
  for (int i = 0; i < 2; ++i) {
    auto created =
        fake_.Create(resources::Pods(), "default", MakePod("default", "big", "worker", i));
    ASSERT_TRUE(created.ok());
    uids.push_back((*created)["metadata"]["uid"]);
  }
  ASSERT_TRUE(WaitFor([&] { return backend_->CachedCount("Pod") == 2; }));
  EXPECT_TRUE(backend_->ReceiveProgress({"default", "big-worker-0", uids[0], {}}).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(
      backend_->ReceiveProgress({"default", "big-worker-1", uids[1], {}}).status()));
}

TEST_F(KubeBackendTest, DelayedWatchEventNeverCreatesTwice) {
  StartBackend();
  const model::Job job = reconcile::testing::SeedPyTorchJob();  // 1 master + 2 workers
  gated_->SetMode("pods", GatedClient::Mode::kHold);
  gated_->SetMode("services", GatedClient::Mode::kHold);
  std::vector<model::Action> first = Pass(job);
  EXPECT_EQ(first.size(), 6u);
  EXPECT_EQ(CreateCalls("pods"), 3);
  EXPECT_EQ(CreateCalls("services"), 3);
  EXPECT_EQ(backend_->PendingExpectations("default", "pytorch-mnist").size(), 6u);

  // The cache has seen nothing, yet the expected pods are observed (Pending) and the
  // reconciler creates nothing again, however often it runs.
  auto observed = backend_->Observe(job);
  ASSERT_TRUE(observed.ok());
  ASSERT_EQ(observed->pods.size(), 3u);
  EXPECT_EQ(observed->pods[0].name, "pytorch-mnist-master-0");
  EXPECT_EQ(observed->pods[0].replica_type, "Master");
  EXPECT_EQ(observed->pods[1].replica_type, "Worker");
  EXPECT_EQ(observed->pods[2].index, 1);
  EXPECT_EQ(observed->pods[0].phase, model::PodPhase::kPending);
  EXPECT_EQ(observed->objects.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(Pass(job).empty());
  EXPECT_EQ(CreateCalls("pods"), 3);
  EXPECT_EQ(CreateCalls("services"), 3);

  // The events arrive: expectations are lowered by the watch, the pods come from the cache.
  gated_->SetMode("pods", GatedClient::Mode::kPass);
  gated_->SetMode("services", GatedClient::Mode::kPass);
  ASSERT_TRUE(
      WaitFor([&] { return backend_->PendingExpectations("default", "pytorch-mnist").empty(); }));
  EXPECT_EQ(backend_->CachedCount("Pod"), 3u);
  EXPECT_TRUE(Pass(job).empty());
  EXPECT_EQ(CreateCalls("pods"), 3);
}

TEST_F(KubeBackendTest, FailedCreateLowersTheExpectation) {
  StartBackend();
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Master(1).Build();
  fake_.FailNext("Create", absl::UnavailableError("apiserver busy"));
  auto observed = backend_->Observe(job);
  ASSERT_TRUE(observed.ok());
  model::ReconcileResult result = reconcile::Reconcile(job, *observed, absl::Now(), {});
  ASSERT_EQ(result.actions.size(), 2u);  // pod, service
  std::vector<absl::Status> results;
  absl::Status applied = backend_->ApplyAll(job, result.actions, &results);
  EXPECT_TRUE(absl::IsUnavailable(applied)) << applied;
  EXPECT_NE(applied.message().find("create "), std::string::npos) << applied;
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].ok() + results[1].ok(), 1);
  ASSERT_TRUE(WaitFor([&] { return backend_->PendingExpectations("ns", "j").empty(); }));
  // The next pass creates what failed, once.
  Pass(job);
  EXPECT_EQ(CreateCalls("pods") + CreateCalls("services"), 3);
  ASSERT_TRUE(WaitFor(
      [&] { return backend_->CachedCount("Pod") == 1 && backend_->CachedCount("Service") == 1; }));
}

TEST_F(KubeBackendTest, AlreadyExistsIsSuccessAndObserved) {
  StartBackend();
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Master(1).Build();
  gated_->SetMode("pods", GatedClient::Mode::kHold);
  // A previous operator process created the pod; this cache has not seen it yet.
  ASSERT_TRUE(fake_.Create(resources::Pods(), "ns", MakePod("ns", "j", "master", 0)).ok());
  auto pod = reconcile::DesiredPod(job, "Master", 0, {});
  ASSERT_TRUE(pod.ok());
  EXPECT_TRUE(backend_->Apply(job, {model::Action::Type::kCreate, *pod}).ok());
  EXPECT_EQ(backend_->PendingExpectations("ns", "j").count("Pod/j-master-0"), 1u);
  auto observed = backend_->Observe(job);
  ASSERT_TRUE(observed.ok());
  ASSERT_EQ(observed->pods.size(), 1u);
  gated_->SetMode("pods", GatedClient::Mode::kPass);
  ASSERT_TRUE(WaitFor([&] { return backend_->PendingExpectations("ns", "j").empty(); }));
}

TEST_F(KubeBackendTest, DeleteNamingAnInstanceLeavesANewerPodOfTheSameName) {
  StartBackend();
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Master(1).Build();
  // The pod a restart created under the name of the instance a late delete was meant for.
  absl::StatusOr<json> current =
      fake_.Create(resources::Pods(), "ns", MakePod("ns", "j", "master", 0));
  ASSERT_TRUE(current.ok());
  const std::string uid = (*current)["metadata"]["uid"];
  model::KubeObject stale{"v1", "Pod", "j-master-0", "ns", {{"metadata", {{"uid", "gone-uid"}}}}};
  EXPECT_TRUE(backend_->Apply(job, {model::Action::Type::kDelete, stale}).ok());
  EXPECT_TRUE(fake_.Get(resources::Pods(), "ns", "j-master-0").ok());
  // The instance it names: deleted.
  model::KubeObject same{"v1", "Pod", "j-master-0", "ns", {{"metadata", {{"uid", uid}}}}};
  EXPECT_TRUE(backend_->Apply(job, {model::Action::Type::kDelete, same}).ok());
  EXPECT_TRUE(absl::IsNotFound(fake_.Get(resources::Pods(), "ns", "j-master-0").status()));
}

TEST_F(KubeBackendTest, ExpectationTimesOut) {
  ::coach::FakeClock clock(absl::Now());
  KubeBackendOptions o;
  o.clock = &clock;
  StartBackend(o);
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Master(1).Build();
  gated_->SetMode("pods", GatedClient::Mode::kDrop);  // the event is lost
  auto pod = reconcile::DesiredPod(job, "Master", 0, {});
  ASSERT_TRUE(backend_->Apply(job, {model::Action::Type::kCreate, *pod}).ok());
  ASSERT_EQ(backend_->Observe(job)->pods.size(), 1u);
  clock.Advance(absl::Minutes(6));
  EXPECT_TRUE(backend_->Observe(job)->pods.empty());
  EXPECT_TRUE(backend_->PendingExpectations("ns", "j").empty());
}

TEST_F(KubeBackendTest, DeleteExpectationHidesALivePodUntilTheWatchSeesItGo) {
  StartBackend();
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Master(1).Build();
  ASSERT_TRUE(fake_.Create(resources::Pods(), "ns", MakePod("ns", "j", "master", 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return backend_->CachedCount("Pod") == 1; }));
  gated_->SetMode("pods", GatedClient::Mode::kHold);
  model::KubeObject victim{"v1", "Pod", "j-master-0", "ns", json()};
  ASSERT_TRUE(backend_->Apply(job, {model::Action::Type::kDelete, victim}).ok());
  auto observed = backend_->Observe(job);
  ASSERT_EQ(observed->pods.size(), 1u);
  EXPECT_TRUE(observed->pods[0].deleting);
  gated_->SetMode("pods", GatedClient::Mode::kPass);
  ASSERT_TRUE(WaitFor([&] { return backend_->Observe(job)->pods.empty(); }));
  EXPECT_TRUE(backend_->PendingExpectations("ns", "j").empty());
  // Deleting what is gone is OK.
  EXPECT_TRUE(backend_->Apply(job, {model::Action::Type::kDelete, victim}).ok());
  EXPECT_TRUE(backend_->PendingExpectations("ns", "j").empty());
}

// A pod stuck deleting on a lost node: the reconciler's force delete is a DELETE with
// gracePeriodSeconds 0, still naming the instance.
TEST_F(KubeBackendTest, ForceDeleteSendsGracePeriodZeroAndTheUid) {
  StartBackend();
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Master(1).Build();
  absl::StatusOr<json> pod = fake_.Create(resources::Pods(), "ns", MakePod("ns", "j", "master", 0));
  ASSERT_TRUE(pod.ok());
  const std::string uid = (*pod)["metadata"]["uid"];
  fake_.ClearCalls();
  model::Action plain{model::Action::Type::kDelete,
                      {"v1", "Pod", "j-master-0", "ns", {{"metadata", {{"uid", "other-uid"}}}}}};
  EXPECT_TRUE(backend_->Apply(job, plain).ok());  // another instance: left alone
  model::Action force{model::Action::Type::kDelete,
                      {"v1", "Pod", "j-master-0", "ns", {{"metadata", {{"uid", uid}}}}}};
  force.force = true;
  EXPECT_TRUE(backend_->Apply(job, force).ok());
  const std::vector<coach::kubeclient::testing::FakeCall> deletes = fake_.calls("Delete");
  ASSERT_EQ(deletes.size(), 2u);
  EXPECT_FALSE(deletes[0].body.contains("gracePeriodSeconds")) << deletes[0].body;
  EXPECT_EQ(deletes[1].resource, "pods");
  EXPECT_EQ(deletes[1].ns, "ns");
  EXPECT_EQ(deletes[1].name, "j-master-0");
  EXPECT_EQ(deletes[1].body, json({{"kind", "DeleteOptions"},
                                   {"apiVersion", "v1"},
                                   {"preconditions", {{"uid", uid}}},
                                   {"propagationPolicy", "Background"},
                                   {"gracePeriodSeconds", 0}}));
  EXPECT_TRUE(absl::IsNotFound(fake_.Get(resources::Pods(), "ns", "j-master-0").status()));

  // Only a Pod's delete can be forced.
  model::Action service{model::Action::Type::kDelete, {"v1", "Service", "j-master-0", "ns", {}}};
  service.force = true;
  absl::Status refused = backend_->Apply(job, service);
  EXPECT_TRUE(absl::IsInvalidArgument(refused)) << refused;
  auto desired = reconcile::DesiredPod(job, "Master", 0, {});
  ASSERT_TRUE(desired.ok());
  model::Action create{model::Action::Type::kCreate, *desired};
  create.force = true;
  EXPECT_TRUE(absl::IsInvalidArgument(backend_->Apply(job, create)));
  EXPECT_EQ(fake_.calls("Delete").size(), 2u);
  EXPECT_EQ(CreateCalls("pods"), 0);
}

json MakeNode(const std::string& name, const std::string& ready) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}}},
          {"status", {{"conditions", {{{"type", "Ready"}, {"status", ready}}}}}}};
}

void SetReady(FakeKubeClient& fake, const std::string& node, const std::string& ready) {
  ASSERT_TRUE(fake.PatchStatus(resources::Nodes(), "", node, coach::kubeclient::PatchType::kMerge,
                               {{"status", MakeNode(node, ready)["status"]}})
                  .ok());
}

TEST_F(KubeBackendTest, NodeLostFromTheNodeWatch) {
  ASSERT_TRUE(fake_.Create(resources::Nodes(), "", MakeNode("node-a", "True")).ok());
  SetReady(fake_, "node-a", "True");
  ASSERT_TRUE(fake_.Create(resources::Nodes(), "", MakeNode("node-b", "True")).ok());
  SetReady(fake_, "node-b", "True");
  StartBackend();
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Workers(3).Build();
  const std::vector<std::string> nodes = {"node-a", "node-b", "node-new"};
  for (int i = 0; i < 3; ++i) {
    json pod = MakePod("ns", "j", "worker", i);
    pod["spec"]["nodeName"] = nodes[i];
    ASSERT_TRUE(fake_.Create(resources::Pods(), "ns", pod).ok());
  }
  // Another job's pod on node-b.
  json other = MakePod("ns", "other", "worker", 0);
  other["spec"]["nodeName"] = "node-b";
  ASSERT_TRUE(fake_.Create(resources::Pods(), "ns", other).ok());
  ASSERT_TRUE(
      WaitFor([&] { return backend_->CachedCount("Pod") == 4 && Changes("ns/other") > 0; }));
  auto lost = [&](const std::string& pod) {
    auto o = backend_->Observe(job);
    return o.ok() && FindPod(*o, pod) != nullptr && FindPod(*o, pod)->node_lost;
  };
  EXPECT_FALSE(lost("j-worker-0"));
  EXPECT_FALSE(lost("j-worker-1"));
  EXPECT_FALSE(lost("j-worker-2"));  // a node the watch has not seen: perhaps a new one

  // node-a stops reporting: its pods' job is told, and the pod is on a lost node.
  const int before = Changes("ns/j");
  const int other_before = Changes("ns/other");
  SetReady(fake_, "node-a", "Unknown");
  ASSERT_TRUE(WaitFor([&] { return lost("j-worker-0"); }));
  EXPECT_GT(Changes("ns/j"), before);
  EXPECT_EQ(Changes("ns/other"), other_before);
  EXPECT_FALSE(lost("j-worker-1"));
  SetReady(fake_, "node-a", "True");
  ASSERT_TRUE(WaitFor([&] { return !lost("j-worker-0"); }));

  // node-b is deleted: both jobs with pods there are told.
  const int deleted_before = Changes("ns/j");
  ASSERT_TRUE(fake_.Delete(resources::Nodes(), "", "node-b", {}).ok());
  ASSERT_TRUE(WaitFor([&] { return lost("j-worker-1"); }));
  EXPECT_GT(Changes("ns/j"), deleted_before);
  ASSERT_TRUE(WaitFor([&] { return Changes("ns/other") > other_before; }));
  EXPECT_FALSE(lost("j-worker-0"));
}

TEST_F(KubeBackendTest, WithoutRbacOnNodesNodeLostStaysFalse) {
  fake_.SetErrorHook([](const coach::kubeclient::testing::FakeCall& call) {
    if (call.resource == "nodes") return absl::PermissionDeniedError("nodes is forbidden");
    return absl::OkStatus();
  });
  StartBackend();
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Workers(1).Build();
  json pod = MakePod("ns", "j", "worker", 0);
  pod["spec"]["nodeName"] = "node-a";
  ASSERT_TRUE(fake_.Create(resources::Pods(), "ns", pod).ok());
  ASSERT_TRUE(WaitFor([&] { return backend_->Observe(job)->pods.size() == 1; }));
  EXPECT_FALSE(backend_->Observe(job)->pods[0].node_lost);
  // One probe, no watch retrying for ever.
  int node_calls = 0;
  for (const auto& c : fake_.calls()) node_calls += c.resource == "nodes";
  EXPECT_EQ(node_calls, 1);
}

// A delete the cache has not shown yet: the pod is deleting since the request was sent, so
// the reconciler's lost_node_grace counts from then.
TEST_F(KubeBackendTest, DeletionRequestedOfAPendingDeleteIsWhenItWasSent) {
  ::coach::FakeClock clock(absl::FromUnixSeconds(1800000000));
  KubeBackendOptions o;
  o.clock = &clock;
  StartBackend(o);
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Master(1).Build();
  ASSERT_TRUE(fake_.Create(resources::Pods(), "ns", MakePod("ns", "j", "master", 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return backend_->CachedCount("Pod") == 1; }));
  EXPECT_EQ(backend_->Observe(job)->pods[0].deletion_requested, absl::InfinitePast());
  gated_->SetMode("pods", GatedClient::Mode::kHold);
  const absl::Time sent = clock.Now();
  model::KubeObject victim{"v1", "Pod", "j-master-0", "ns", json()};
  ASSERT_TRUE(backend_->Apply(job, {model::Action::Type::kDelete, victim}).ok());
  clock.Advance(absl::Seconds(5));
  auto observed = backend_->Observe(job);
  ASSERT_EQ(observed->pods.size(), 1u);
  EXPECT_TRUE(observed->pods[0].deleting);
  EXPECT_EQ(observed->pods[0].deletion_requested, sent);
}

TEST_F(KubeBackendTest, CreatesPodsAndServicesInParallelAfterTheRest) {
  std::mutex mu;
  int in_flight = 0, max_in_flight = 0;
  std::vector<std::string> order;
  KubeBackendOptions o;
  o.create_parallelism = 4;
  o.request_hook = [&](const model::Action& a, bool entering) {
    {
      std::lock_guard<std::mutex> l(mu);
      if (entering) {
        order.push_back(a.object.kind);
        max_in_flight = std::max(max_in_flight, ++in_flight);
      } else {
        --in_flight;
      }
    }
    if (entering) absl::SleepFor(absl::Milliseconds(30));
  };
  StartBackend(o);
  // MPIJob: ConfigMap, ServiceAccount, Role, RoleBinding, then launcher + 8 worker pods.
  const model::Job job = reconcile::testing::MakeMPIJob("ns", "mpi").Launcher(1).Workers(8).Build();
  const absl::Time start = absl::Now();
  std::vector<model::Action> applied = Pass(job);
  const absl::Duration took = absl::Now() - start;
  ASSERT_EQ(applied.size(), 13u);
  EXPECT_EQ(max_in_flight, 4);
  // 4 sequential + 9 pods on 4 threads (3 rounds), not 13 sequential requests (a loose
  // bound: the machine may be busy).
  EXPECT_LT(took, absl::Milliseconds(30 * 13));
  ASSERT_EQ(order.size(), 13u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NE(order[i], "Pod") << i;
  for (size_t i = 4; i < 13; ++i) EXPECT_EQ(order[i], "Pod") << i;
  // The non-pod objects carry coach's job label and so reach the caches.
  ASSERT_TRUE(WaitFor([&] {
    return backend_->CachedCount("ConfigMap") == 1 && backend_->CachedCount("Role") == 1 &&
           backend_->CachedCount("RoleBinding") == 1 &&
           backend_->CachedCount("ServiceAccount") == 1 && backend_->CachedCount("Pod") == 9;
  }));
  ASSERT_TRUE(WaitFor([&] { return backend_->PendingExpectations("ns", "mpi").empty(); }));
  auto observed = backend_->Observe(job);
  EXPECT_EQ(observed->objects.size(), 4u);
  const model::ObservedPod* launcher = FindPod(*observed, "mpi-launcher");
  ASSERT_NE(launcher, nullptr);
  EXPECT_EQ(launcher->replica_type, "Launcher");
  EXPECT_TRUE(Pass(job).empty());
}

// Upstream's training-operator ran the job before coach took its place: its pods and Service
// carry upstream's labels only, and the one watch (coach's job label) finds them once the
// leader's start has labelled them.
TEST_F(KubeBackendTest, AnEarlierOperatorsPodsAreObservedAfterStart) {
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Master(1).Workers(1).Build();
  for (const char* type : {"master", "worker"}) {
    json pod = MakePod("ns", "j", type, 0);
    pod["metadata"]["labels"].erase("coach.dev/job-name");
    ASSERT_TRUE(fake_.Create(resources::Pods(), "ns", pod).ok());
    json service = {
        {"metadata", {{"name", pod["metadata"]["name"]}, {"labels", pod["metadata"]["labels"]}}},
        {"spec", {{"clusterIP", "None"}}}};
    ASSERT_TRUE(fake_.Create(resources::Services(), "ns", service).ok());
  }
  StartBackend();
  auto observed = backend_->Observe(job);
  ASSERT_TRUE(observed.ok()) << observed.status();
  ASSERT_EQ(observed->pods.size(), 2u);
  EXPECT_EQ(FindPod(*observed, "j-master-0")->replica_type, "Master");
  EXPECT_EQ(FindPod(*observed, "j-worker-0")->replica_type, "Worker");
  EXPECT_EQ(backend_->CachedCount("Service"), 2u);
  auto pod = fake_.Get(resources::Pods(), "ns", "j-worker-0");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(pod->at("metadata").at("labels").value("coach.dev/job-name", ""), "j");
}

TEST_F(KubeBackendTest, ObservedPodMapping) {
  StartBackend();
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Master(1).Workers(2).Build();
  json pod = MakePod("ns", "j", "worker", 1);
  pod["spec"]["containers"].push_back({{"name", "sidecar"}, {"image", "busybox"}});
  ASSERT_TRUE(fake_.Create(resources::Pods(), "ns", pod).ok());
  json status = {
      {"phase", "Running"},
      {"containerStatuses",
       {{{"name", "sidecar"}, {"restartCount", 1}, {"state", {{"running", json::object()}}}},
        {{"name", "pytorch"},
         {"restartCount", 2},
         {"state", {{"running", json::object()}}},
         {"lastState", {{"terminated", {{"exitCode", 137}, {"reason", "OOMKilled"}}}}}}}}};
  ASSERT_TRUE(fake_
                  .PatchStatus(resources::Pods(), "ns", "j-worker-1",
                               coach::kubeclient::PatchType::kMerge, {{"status", status}})
                  .ok());
  json done = MakePod("ns", "j", "master", 0);
  done["metadata"]["finalizers"] = {"coach.test/hold"};
  ASSERT_TRUE(fake_.Create(resources::Pods(), "ns", done).ok());
  ASSERT_TRUE(
      fake_
          .PatchStatus(
              resources::Pods(), "ns", "j-master-0", coach::kubeclient::PatchType::kMerge,
              {{"status",
                {{"phase", "Failed"},
                 {"containerStatuses",
                  {{{"name", "pytorch"},
                    {"restartCount", 0},
                    {"state", {{"terminated", {{"exitCode", 3}, {"reason", "Error"}}}}}}}}}}})
          .ok());
  ASSERT_TRUE(fake_.Delete(resources::Pods(), "ns", "j-master-0", {}).ok());
  // Another job's pod and a pod without coach's labels stay out.
  ASSERT_TRUE(fake_.Create(resources::Pods(), "ns", MakePod("ns", "other", "worker", 0)).ok());
  json foreign = {
      {"metadata", {{"name", "foreign"}, {"labels", {{reconcile::kLabelJobName, "j"}}}}}};
  ASSERT_TRUE(fake_.Create(resources::Pods(), "ns", foreign).ok());

  ASSERT_TRUE(WaitFor([&] {
    auto o = backend_->Observe(job);
    return o.ok() && o->pods.size() == 2 && FindPod(*o, "j-master-0")->deleting &&
           FindPod(*o, "j-worker-1")->phase == model::PodPhase::kRunning;
  }));
  auto observed = backend_->Observe(job);
  const model::ObservedPod* w = FindPod(*observed, "j-worker-1");
  EXPECT_EQ(w->replica_type, "Worker");
  EXPECT_EQ(w->index, 1);
  EXPECT_EQ(w->restart_count, 3);
  ASSERT_TRUE(w->exit_code.has_value());
  EXPECT_EQ(*w->exit_code, 137);  // lastState of the default container, not the sidecar
  EXPECT_EQ(w->message, "OOMKilled");
  EXPECT_FALSE(w->deleting);
  EXPECT_GT(w->created, absl::Now() - absl::Minutes(1));
  const model::ObservedPod* m = FindPod(*observed, "j-master-0");
  EXPECT_EQ(m->replica_type, "Master");
  EXPECT_EQ(m->phase, model::PodPhase::kFailed);
  EXPECT_EQ(m->exit_code, 3);
  EXPECT_TRUE(m->deleting);
  EXPECT_EQ(m->message, "Error");
}

TEST_F(KubeBackendTest, ChangeCallbackFiresOnPodEvents) {
  StartBackend();
  ASSERT_TRUE(fake_.Create(resources::Pods(), "ns", MakePod("ns", "j", "worker", 0)).ok());
  ASSERT_TRUE(WaitFor([&] { return Changes("ns/j") >= 1; }));
  const int before = Changes("ns/j");
  ASSERT_TRUE(fake_
                  .PatchStatus(resources::Pods(), "ns", "j-worker-0",
                               coach::kubeclient::PatchType::kMerge,
                               {{"status", {{"phase", "Running"}}}})
                  .ok());
  ASSERT_TRUE(WaitFor([&] { return Changes("ns/j") > before; }));
  const int running = Changes("ns/j");
  ASSERT_TRUE(fake_.Delete(resources::Pods(), "ns", "j-worker-0", {}).ok());
  ASSERT_TRUE(WaitFor([&] { return Changes("ns/j") > running; }));
  EXPECT_EQ(Changes("ns/other"), 0);
}

TEST_F(KubeBackendTest, RelistOnGoneRepairsTheCache) {
  StartBackend();
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Workers(3).Build();
  ASSERT_TRUE(fake_.Create(resources::Pods(), "ns", MakePod("ns", "j", "worker", 0)).ok());
  ASSERT_TRUE(fake_.Create(resources::Pods(), "ns", MakePod("ns", "j", "worker", 1)).ok());
  ASSERT_TRUE(WaitFor([&] { return backend_->Observe(job)->pods.size() == 2; }));
  // The watch misses a deletion and a creation, then its resourceVersion expires.
  gated_->SetMode("pods", GatedClient::Mode::kDrop);
  ASSERT_TRUE(fake_.Delete(resources::Pods(), "ns", "j-worker-0", {}).ok());
  ASSERT_TRUE(fake_.Create(resources::Pods(), "ns", MakePod("ns", "j", "worker", 2)).ok());
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(backend_->Observe(job)->pods.size(), 2u);
  EXPECT_NE(FindPod(*backend_->Observe(job), "j-worker-0"), nullptr);  // stale
  gated_->SetMode("pods", GatedClient::Mode::kPass);
  fake_.CompactHistory();
  fake_.CloseWatches();
  ASSERT_TRUE(WaitFor([&] {
    auto o = backend_->Observe(job);
    return o->pods.size() == 2 && FindPod(*o, "j-worker-0") == nullptr &&
           FindPod(*o, "j-worker-2") != nullptr;
  }));
  EXPECT_GE(Changes("ns/j"), 3);
}

TEST_F(KubeBackendTest, ForgetDeletesPodsServicesAndPendingCreates) {
  StartBackend();
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Master(1).Workers(1).Build();
  Pass(job);
  ASSERT_TRUE(WaitFor(
      [&] { return backend_->CachedCount("Pod") == 2 && backend_->CachedCount("Service") == 2; }));
  gated_->SetMode("pods", GatedClient::Mode::kHold);
  // A third pod whose creation the cache has not seen yet.
  auto extra = reconcile::DesiredPod(job, "Worker", 1, {});
  ASSERT_TRUE(backend_->Apply(job, {model::Action::Type::kCreate, *extra}).ok());
  EXPECT_TRUE(backend_->Forget(job).ok());
  EXPECT_TRUE(fake_.List(resources::Pods(), "ns", {})->items.empty());
  EXPECT_TRUE(fake_.List(resources::Services(), "ns", {})->items.empty());
  EXPECT_TRUE(backend_->PendingExpectations("ns", "j").empty());
  gated_->SetMode("pods", GatedClient::Mode::kPass);
  ASSERT_TRUE(WaitFor([&] { return backend_->CachedCount("Pod") == 0; }));
  EXPECT_TRUE(backend_->Forget(job).ok());  // idempotent
}

TEST_F(KubeBackendTest, StreamLogsByReplica) {
  StartBackend();
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Master(1).Workers(1).Build();
  Pass(job);
  ASSERT_TRUE(WaitFor([&] { return backend_->CachedCount("Pod") == 2; }));
  fake_.SetLogs("ns", "j-master-0", "pytorch", "hello from master\n");
  fake_.SetLogs("ns", "j-worker-0", "pytorch", "hello from worker\n");
  std::atomic<bool> cancelled{false};
  std::map<std::string, std::string> got;
  auto sink = [&](const std::string& replica, const std::string& data) {
    got[replica] += data;
    return true;
  };
  LogOptions one;
  one.replica = "master-0";
  ASSERT_TRUE(backend_->StreamLogs(job, one, sink, cancelled).ok());
  EXPECT_EQ(got, (std::map<std::string, std::string>{{"master-0", "hello from master\n"}}));
  got.clear();
  ASSERT_TRUE(backend_->StreamLogs(job, LogOptions{}, sink, cancelled).ok());
  EXPECT_EQ(got.size(), 2u);
  EXPECT_EQ(got["worker-0"], "hello from worker\n");
  LogOptions missing;
  missing.replica = "worker-7";
  absl::Status s = backend_->StreamLogs(job, missing, sink, cancelled);
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
}

// With leader election only the leader starts its backend; the other replicas serve the API too,
// and `coach logs` through one of them reads the pods from the API server instead of a cache.
TEST_F(KubeBackendTest, StreamLogsWithoutAStartedBackendAsksTheApiServer) {
  StartBackend();
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Master(1).Workers(1).Build();
  Pass(job);
  ASSERT_TRUE(WaitFor([&] { return backend_->CachedCount("Pod") == 2; }));
  fake_.SetLogs("ns", "j-master-0", "pytorch", "hello from master\n");
  fake_.SetLogs("ns", "j-worker-0", "pytorch", "hello from worker\n");
  KubeBackendOptions options;
  options.client = gated_.get();
  auto follower = KubeBackend::Create(std::move(options));
  ASSERT_TRUE(follower.ok()) << follower.status();
  std::atomic<bool> cancelled{false};
  std::map<std::string, std::string> got;
  auto sink = [&](const std::string& replica, const std::string& data) {
    got[replica] += data;
    return true;
  };
  LogOptions one;
  one.replica = "worker-0";
  ASSERT_TRUE((*follower)->StreamLogs(job, one, sink, cancelled).ok());
  EXPECT_EQ(got, (std::map<std::string, std::string>{{"worker-0", "hello from worker\n"}}));
  got.clear();
  ASSERT_TRUE((*follower)->StreamLogs(job, LogOptions{}, sink, cancelled).ok());
  EXPECT_EQ(got.size(), 2u);
  LogOptions missing;
  missing.replica = "worker-7";
  EXPECT_TRUE(absl::IsNotFound((*follower)->StreamLogs(job, missing, sink, cancelled)));
}

TEST_F(KubeBackendTest, PodGroupCrdAbsentIsTolerated) {
  fake_.SetErrorHook([](const coach::kubeclient::testing::FakeCall& call) {
    if (call.resource == "podgroups.scheduling.volcano.sh") {
      return absl::NotFoundError("the server could not find the requested resource");
    }
    return absl::OkStatus();
  });
  KubeBackendOptions o;
  o.gang_scheduler = "volcano";
  StartBackend(o);
  model::ReconcileConfig config;
  config.gang_scheduler = model::GangScheduler::kVolcano;
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Master(1).Build();
  auto observed = backend_->Observe(job);
  ASSERT_TRUE(observed.ok());
  model::ReconcileResult result = reconcile::Reconcile(job, *observed, absl::Now(), config);
  absl::Status applied = backend_->ApplyAll(job, result.actions);
  EXPECT_TRUE(absl::IsFailedPrecondition(applied)) << applied;
  EXPECT_NE(applied.message().find("PodGroup"), std::string::npos) << applied;
  EXPECT_EQ(CreateCalls("pods"), 0);  // no pod before its PodGroup
}

TEST_F(KubeBackendTest, PodGroupsWithVolcano) {
  KubeBackendOptions o;
  o.gang_scheduler = "volcano";
  StartBackend(o);
  model::ReconcileConfig config;
  config.gang_scheduler = model::GangScheduler::kVolcano;
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Master(1).Workers(1).Build();
  Pass(job, config);
  ASSERT_TRUE(WaitFor([&] { return backend_->CachedCount("PodGroup") == 1; }));
  ASSERT_TRUE(WaitFor([&] { return backend_->PendingExpectations("ns", "j").empty(); }));
  auto observed = backend_->Observe(job);
  EXPECT_EQ(std::count_if(observed->objects.begin(), observed->objects.end(),
                          [](const model::ObservedObject& x) { return x.kind == "PodGroup"; }),
            1);
  EXPECT_TRUE(Pass(job, config).empty());
}

}  // namespace
}  // namespace coach::backend::kube

namespace coach::backend::kube {
namespace {

// An MPI TrainJob's SSH Secret: created with a fresh key pair, never listed, watched or read;
// after a restart the existing one (AlreadyExists) is kept, keys and all, and observed.
TEST_F(KubeBackendTest, SecretsAreCreatedWithKeysAndNeverRead) {
  StartBackend();
  const model::Job job = reconcile::testing::MakePyTorchJob("ns", "j").Master(1).Build();
  model::KubeObject secret;
  secret.api_version = "v1";
  secret.kind = "Secret";
  secret.name = "j-mpi-ssh-auth";
  secret.body = reconcile::MpiSshAuthSecret("j", "ns", nlohmann::json::array());
  ASSERT_TRUE(backend_->Apply(job, {model::Action::Type::kCreate, secret}).ok());
  const coach::kubeclient::ResourceDescriptor secrets{"", "v1", "secrets", "Secret", true, false};
  auto only_creates = [this] {
    for (const coach::kubeclient::testing::FakeCall& call : fake_.calls()) {
      if (call.resource != "secrets") continue;
      EXPECT_EQ(call.method, "Create") << "the operator read a Secret";
    }
  };
  only_creates();
  absl::StatusOr<nlohmann::json> stored = fake_.Get(secrets, "ns", "j-mpi-ssh-auth");
  fake_.ClearCalls();
  ASSERT_TRUE(stored.ok()) << stored.status();
  const std::string key = (*stored)["data"].value(kSshPrivateKeyField, "");
  EXPECT_FALSE(key.empty());
  EXPECT_FALSE((*stored)["data"].value(kSshPublicKeyField, "").empty());
  EXPECT_EQ((*stored)["metadata"]["labels"]["coach.dev/job-name"], "j");

  absl::StatusOr<model::ObservedState> observed = backend_->Observe(job);
  ASSERT_TRUE(observed.ok());
  EXPECT_TRUE(std::any_of(observed->objects.begin(), observed->objects.end(),
                          [](const model::ObservedObject& o) {
                            return o.kind == "Secret" && o.name == "j-mpi-ssh-auth";
                          }));

  // A restarted operator: its create meets AlreadyExists, keeps the first keys, observes it.
  backend_->Stop();
  backend_.reset();
  StartBackend();
  ASSERT_TRUE(backend_->Apply(job, {model::Action::Type::kCreate, secret}).ok());
  only_creates();
  EXPECT_EQ((*fake_.Get(secrets, "ns", "j-mpi-ssh-auth"))["data"].value(kSshPrivateKeyField, ""),
            key);
  fake_.ClearCalls();
  observed = backend_->Observe(job);
  ASSERT_TRUE(observed.ok());
  EXPECT_EQ(std::count_if(observed->objects.begin(), observed->objects.end(),
                          [](const model::ObservedObject& o) { return o.kind == "Secret"; }),
            1);
  // Deleting one is refused: the garbage collector removes it with its job.
  EXPECT_FALSE(backend_->Apply(job, {model::Action::Type::kDelete, secret}).ok());
  only_creates();
}

}  // namespace
}  // namespace coach::backend::kube
