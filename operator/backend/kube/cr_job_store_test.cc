// CrJobStore against FakeKubeClient and against a real kube-apiserver (tools/testenv) with
// coach's CRDs applied by kubectl (charts/coach/crds). The real half is skipped when the
// testenv binaries are not built and fails under CI=true.
#include "operator/backend/kube/cr_job_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "api/v1/codec/job_codec.h"
#include "api/v1/defaults.h"
#include "common/testing/eventually.h"
#include "gtest/gtest.h"
#include "operator/backend/kube/client/kube_config.h"
#include "operator/backend/kube/client/rest_kube_client.h"
#include "operator/backend/kube/testing/fake_kube_client.h"
#include "operator/backend/kube/testing/forwarding_kube_client.h"
#include "operator/backend/kube/testing/testenv.h"
#include "operator/store/testing/job_store_contract.h"

namespace coach::backend::kube {
namespace {

namespace k8s = ::coach::kubeclient;
using nlohmann::json;

json Manifest(const std::string& kind, const std::string& ns, const std::string& name,
              json labels = json::object()) {
  const bool tf = kind == "TFJob";
  json replica = {{"replicas", 1},
                  {"restartPolicy", "OnFailure"},
                  {"template",
                   {{"spec",
                     {{"containers", json::array({{{"name", tf ? "tensorflow" : "pytorch"},
                                                   {"image", "coach.local/none"}}})}}}}}};
  json m = {{"apiVersion", "kubeflow.org/v1"},
            {"kind", kind},
            {"metadata", {{"name", name}, {"namespace", ns}}},
            {"spec", {{tf ? "tfReplicaSpecs" : "pytorchReplicaSpecs", {{"Worker", replica}}}}}};
  if (!labels.empty()) m["metadata"]["labels"] = labels;
  return m;
}

api::v1::TrainingJob Job(const std::string& kind, const std::string& ns, const std::string& name,
                         json labels = json::object()) {
  auto job = api::v1::codec::JobFromJson(Manifest(kind, ns, name, std::move(labels)));
  EXPECT_TRUE(job.ok()) << job.status();
  if (!job.ok()) return api::v1::TrainingJob();
  api::v1::SetDefaults(&*job);  // as JobService's admission does
  return *job;
}

std::vector<std::string> Names(const store::ListResult& r) {
  std::vector<std::string> out;
  for (const auto& j : r.jobs) out.push_back(j.metadata().name());
  return out;
}

using ::coach::testing::Eventually;

struct Changes {
  absl::Mutex mu;
  std::vector<std::string> seen;  // "ADDED ns/name", ...
  void Add(const JobChange& c) {
    static const char* kNames[] = {"ADDED", "MODIFIED", "DELETED"};
    absl::MutexLock lock(&mu);
    seen.push_back(absl::StrCat(kNames[static_cast<int>(c.type)], " ", c.key.namespace_, "/",
                                c.key.name, c.job.has_value() ? "" : " (no object)"));
  }
  bool Has(const std::string& s) {
    absl::MutexLock lock(&mu);
    for (const auto& x : seen) {
      if (x == s) return true;
    }
    return false;
  }
};

// Forwards to a client and counts what this test's store asks of it: every call, and the reads
// of one object (Get, GetStatus), the requests a read served by the watch must not make. Counted
// here, not at the shared real client, so that no other store's watch (a reflector reopening it,
// or one of an earlier test winding down) is counted.
class CountingClient : public k8s::testing::ForwardingKubeClient {
 public:
  using ForwardingKubeClient::ForwardingKubeClient;
  int64_t calls() const { return calls_.load(); }
  int64_t object_reads() const { return object_reads_.load(); }

 protected:
  void Called(absl::string_view verb) override {
    ++calls_;
    if (verb == "get" || verb == "getstatus") ++object_reads_;
  }

 private:
  std::atomic<int64_t> calls_{0};
  std::atomic<int64_t> object_reads_{0};
};

// One real control plane for every test of this binary, started by the first test that needs
// it and brought down after the last one.
class RealApiServer : public ::testing::Environment {
 public:
  static RealApiServer* Get() {
    static RealApiServer* const server = [] {
      auto* s = new RealApiServer();
      ::testing::AddGlobalTestEnvironment(s);  // gtest owns it
      return s;
    }();
    return server;
  }

  // OK once it is up; the error of its one start otherwise.
  absl::Status Up() {
    if (env_ == nullptr && status_.ok()) status_ = Start();
    return status_;
  }
  // A start that failed for want of the binaries skips the tests outside CI.
  static bool Skippable(const absl::Status& up) {
    return absl::IsNotFound(up) && !k8s::testing::InCi();
  }
  k8s::RestKubeClient* client() const { return client_.get(); }
  const std::string& kubectl() const { return kubectl_; }

  void TearDown() override {
    client_.reset();
    env_.reset();
  }

 private:
  absl::Status Start() {
    auto e = k8s::testing::TestEnv::Start();
    if (!e.ok()) return e.status();
    env_ = std::move(*e);
    k8s::RestKubeClientOptions o;
    o.qps = 200;
    o.burst = 400;
    auto c = env_->NewClient(o);
    if (!c.ok()) return c.status();
    client_ = std::move(*c);
    kubectl_ = env_->kubectl();
    return env_->ApplyCoachCrds();
  }

  std::unique_ptr<k8s::testing::TestEnv> env_;
  absl::Status status_;
  std::unique_ptr<k8s::RestKubeClient> client_;
  std::string kubectl_;
};

// Registered before main, so that gtest brings the control plane down at the end.
RealApiServer* const kRealApiServer = RealApiServer::Get();

class CrJobStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "fake") {
      fake_ = std::make_unique<k8s::testing::FakeKubeClient>();
      client_ = fake_.get();
    } else {
      if (const absl::Status up = kRealApiServer->Up(); !up.ok()) {
        if (RealApiServer::Skippable(up)) GTEST_SKIP() << up;
        FAIL() << up;
      }
      client_ = kRealApiServer->client();
      kubectl_ = kRealApiServer->kubectl();
    }
    counting_ = std::make_unique<CountingClient>(client_);
    client_ = counting_.get();
    static std::mt19937_64 rng(std::random_device{}());
    ns_ = absl::StrCat("crjs-", rng() % 1000000000);
    ASSERT_TRUE(
        client_->Create(k8s::resources::Namespaces(), "", {{"metadata", {{"name", ns_}}}}).ok());
    CrJobStoreOptions options;
    options.reflector.initial_backoff = absl::Milliseconds(50);
    options.reflector.max_backoff = absl::Milliseconds(500);
    auto store = CrJobStore::Create(client_, options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }

  void TearDown() override {
    if (store_ != nullptr) store_->StopWatching();
    if (client_ != nullptr && !ns_.empty())
      (void)client_->Delete(k8s::resources::Namespaces(), "", ns_, {});
  }

  bool real() const { return GetParam() == "real"; }

  std::string kubectl_;
  std::unique_ptr<k8s::testing::FakeKubeClient> fake_;
  std::unique_ptr<CountingClient> counting_;
  k8s::KubeClient* client_ = nullptr;  // counting_, over the fake or the real API server
  Changes changes_;                    // outlives the store's watch threads (stopped in TearDown)
  std::unique_ptr<CrJobStore> store_;
  std::string ns_;
};

TEST_P(CrJobStoreTest, CreateGetAcrossKinds) {
  auto a = store_->Create(Job("PyTorchJob", ns_, "a"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->kind(), api::v1::PYTORCH_JOB);
  EXPECT_FALSE(a->metadata().uid().empty());
  EXPECT_FALSE(a->metadata().resource_version().empty());
  EXPECT_GT(a->metadata().creation_timestamp().seconds(), 0);
  if (real()) {
    EXPECT_EQ(a->metadata().generation(), 1);
  }
  EXPECT_EQ(a->spec().replica_specs().at("Worker").replicas(), 1);

  auto b = store_->Create(Job("TFJob", ns_, "b"));
  ASSERT_TRUE(b.ok()) << b.status();
  auto got_b = store_->Get({ns_, "b"});
  ASSERT_TRUE(got_b.ok()) << got_b.status();
  EXPECT_EQ(got_b->kind(), api::v1::TF_JOB);
  EXPECT_EQ(got_b->metadata().uid(), b->metadata().uid());
  auto got_a = store_->Get({ns_, "a"});
  ASSERT_TRUE(got_a.ok());
  EXPECT_EQ(got_a->metadata().resource_version(), a->metadata().resource_version());

  EXPECT_EQ(store_->Get({ns_, "nope"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Create(Job("PyTorchJob", ns_, "a")).status().code(),
            absl::StatusCode::kAlreadyExists);
  api::v1::TrainingJob no_ns = Job("PyTorchJob", ns_, "z");
  no_ns.mutable_metadata()->clear_namespace_();
  EXPECT_EQ(store_->Create(no_ns).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Create(Job("PyTorchJob", ns_, "")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(CrJobStoreTest, CreateWithStatusWritesIt) {
  api::v1::TrainingJob job = Job("PyTorchJob", ns_, "s");
  auto* c = job.mutable_status()->add_conditions();
  c->set_type("Created");
  c->set_status("True");
  c->set_reason("PyTorchJobCreated");
  auto created = store_->Create(job);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_EQ(created->status().conditions_size(), 1);
  EXPECT_EQ(store_->Get({ns_, "s"})->status().conditions(0).reason(), "PyTorchJobCreated");
}

// status.coach through the CRD's schema and back: nothing pruned, a metric of 3.0 (which the API
// server writes as 3) still a number, and a NaN metric left out instead of failing the write.
TEST_P(CrJobStoreTest, CoachStatusSurvivesTheApiServer) {
  auto created = store_->Create(Job("PyTorchJob", ns_, "progress"));
  ASSERT_TRUE(created.ok()) << created.status();
  api::v1::TrainingJob job = *created;
  api::v1::CoachJobStatus* coach = job.mutable_status()->mutable_coach();
  coach->set_attempt(2);
  coach->set_restarts(1);
  coach->set_disruptions(1);
  (*coach->mutable_restarts_by_type())["Worker"] = 1;
  coach->mutable_attempt_running_time()->set_seconds(1714564800);
  api::v1::JobProgress* progress = coach->mutable_progress();
  progress->set_step(1200);
  progress->set_steps_per_second(2.0);
  progress->mutable_last_progress_time()->set_seconds(1714565100);
  (*progress->mutable_metrics())["loss"] = 0.25;
  (*progress->mutable_metrics())["epoch"] = 3.0;
  (*progress->mutable_metrics())["grad_norm"] = std::numeric_limits<double>::quiet_NaN();
  auto written = store_->UpdateStatus(job);
  ASSERT_TRUE(written.ok()) << written.status();
  auto got = store_->Get({ns_, "progress"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(api::v1::codec::JobToJson(*got)["status"]["coach"], json::parse(R"({
    "attempt": 2, "restarts": 1, "disruptions": 1, "restartsByType": {"Worker": 1},
    "attemptRunningTime": "2024-05-01T12:00:00Z",
    "progress": {"step": 1200, "stepsPerSecond": 2.0, "lastProgressTime": "2024-05-01T12:05:00Z",
                 "metrics": {"loss": 0.25, "epoch": 3.0}}})"));
}

TEST_P(CrJobStoreTest, SameNameInTwoKindsNeedsTheKind) {
  ASSERT_TRUE(store_->Create(Job("PyTorchJob", ns_, "x")).ok());
  ASSERT_TRUE(store_->Create(Job("TFJob", ns_, "x")).ok());
  auto ambiguous = store_->Get({ns_, "x"});
  EXPECT_EQ(ambiguous.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(ambiguous.status().message(), "PyTorchJob and TFJob"))
      << ambiguous.status();
  EXPECT_TRUE(absl::StrContains(ambiguous.status().message(), "tfjobs/x")) << ambiguous.status();
  EXPECT_EQ(store_->Get({ns_, "tfjobs/x"})->kind(), api::v1::TF_JOB);
  EXPECT_EQ(store_->Get({ns_, "PyTorchJob/x"})->kind(), api::v1::PYTORCH_JOB);
  EXPECT_EQ(store_->Get({ns_, "tfjob/x"})->kind(), api::v1::TF_JOB);
  EXPECT_EQ(store_->Get({ns_, "bogus/x"}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Delete({ns_, "x"}, std::nullopt).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store_->Delete({ns_, "tfjobs/x"}, std::nullopt).ok());
  EXPECT_TRUE(Eventually([&] {
    auto g = store_->Get({ns_, "x"});
    return g.ok() && g->kind() == api::v1::PYTORCH_JOB;
  }));
}

TEST_P(CrJobStoreTest, ListMergesKindsInOrderWithSelectorsAndPages) {
  const json red = {{"team", "red"}};
  ASSERT_TRUE(store_->Create(Job("PyTorchJob", ns_, "a", red)).ok());
  ASSERT_TRUE(store_->Create(Job("TFJob", ns_, "b", red)).ok());
  ASSERT_TRUE(store_->Create(Job("PyTorchJob", ns_, "c")).ok());
  ASSERT_TRUE(store_->Create(Job("TFJob", ns_, "d", {{"team", "blue"}})).ok());
  ASSERT_TRUE(store_->Create(Job("PyTorchJob", ns_, "e", red)).ok());

  store::ListOptions all;
  all.namespace_ = ns_;
  auto everything = store_->List(all);
  ASSERT_TRUE(everything.ok()) << everything.status();
  EXPECT_EQ(Names(*everything), (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(everything->jobs[1].kind(), api::v1::TF_JOB);
  EXPECT_EQ(everything->next_page_token, "");

  // Pages of 2: 2 + 2 + 1, no empty trailing page.
  store::ListOptions paged = all;
  paged.page_size = 2;
  std::vector<std::string> seen;
  int pages = 0;
  do {
    auto page = store_->List(paged);
    ASSERT_TRUE(page.ok()) << page.status();
    ++pages;
    for (auto& n : Names(*page)) seen.push_back(n);
    paged.page_token = page->next_page_token;
  } while (!paged.page_token.empty());
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b", "c", "d", "e"}));

  // The label selector goes to the server; pages hold matches only.
  store::ListOptions reds = all;
  reds.label_selector = {{"team", "red"}};
  reds.page_size = 2;
  auto p1 = store_->List(reds);
  ASSERT_TRUE(p1.ok());
  EXPECT_EQ(Names(*p1), (std::vector<std::string>{"a", "b"}));
  ASSERT_FALSE(p1->next_page_token.empty());
  reds.page_token = p1->next_page_token;
  auto p2 = store_->List(reds);
  ASSERT_TRUE(p2.ok());
  EXPECT_EQ(Names(*p2), (std::vector<std::string>{"e"}));
  EXPECT_EQ(p2->next_page_token, "");
  store::ListOptions bad = all;
  bad.page_token = "!!";
  EXPECT_EQ(store_->List(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad.page_token = "";
  bad.page_size = -1;
  EXPECT_EQ(store_->List(bad).status().code(), absl::StatusCode::kInvalidArgument);
  store::ListOptions none = all;
  none.label_selector = {{"team", "green"}};
  EXPECT_TRUE(store_->List(none)->jobs.empty());
}

TEST_P(CrJobStoreTest, NamespacesOptionScopesLists) {
  ASSERT_TRUE(store_->Create(Job("PyTorchJob", ns_, "a")).ok());
  CrJobStoreOptions options;
  options.namespaces = {"elsewhere-" + ns_};
  auto scoped = CrJobStore::Create(client_, options);
  ASSERT_TRUE(scoped.ok());
  store::ListOptions lo;
  EXPECT_TRUE((*scoped)->List(lo)->jobs.empty());
  lo.namespace_ = ns_;
  EXPECT_TRUE((*scoped)->List(lo)->jobs.empty());
  EXPECT_EQ(store_->List(lo)->jobs.size(), 1u);
}

TEST_P(CrJobStoreTest, UpdateIsOptimistic) {
  auto v1 = store_->Create(Job("PyTorchJob", ns_, "a"));
  ASSERT_TRUE(v1.ok());
  api::v1::TrainingJob labelled = *v1;
  (*labelled.mutable_metadata()->mutable_labels())["k"] = "v";
  auto v2 = store_->Update(labelled);
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_NE(v2->metadata().resource_version(), v1->metadata().resource_version());
  EXPECT_EQ(v2->metadata().uid(), v1->metadata().uid());
  EXPECT_EQ(v2->metadata().labels().at("k"), "v");
  if (real()) {
    EXPECT_EQ(v2->metadata().generation(), 1);
  }

  // Stale: 409 -> Aborted, nothing written.
  api::v1::TrainingJob stale = *v1;
  stale.mutable_spec()->mutable_replica_specs()->at("Worker").set_replicas(5);
  EXPECT_EQ(store_->Update(stale).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(store_->Get({ns_, "a"})->spec().replica_specs().at("Worker").replicas(), 1);

  api::v1::TrainingJob bigger = *v2;
  bigger.mutable_spec()->mutable_replica_specs()->at("Worker").set_replicas(3);
  auto v3 = store_->Update(bigger);
  ASSERT_TRUE(v3.ok()) << v3.status();
  EXPECT_EQ(v3->spec().replica_specs().at("Worker").replicas(), 3);
  if (real()) {
    EXPECT_EQ(v3->metadata().generation(), 2);
  }

  api::v1::TrainingJob no_rv = *v3;
  no_rv.mutable_metadata()->clear_resource_version();
  EXPECT_EQ(store_->Update(no_rv).status().code(), absl::StatusCode::kInvalidArgument);
  api::v1::TrainingJob ghost = *v3;
  ghost.mutable_metadata()->set_name("ghost");
  EXPECT_EQ(store_->Update(ghost).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(CrJobStoreTest, UpdateStatusUsesTheSubresource) {
  auto v1 = store_->Create(Job("TFJob", ns_, "a"));
  ASSERT_TRUE(v1.ok());
  api::v1::TrainingJob s = *v1;
  auto* c = s.mutable_status()->add_conditions();
  c->set_type("Running");
  c->set_status("True");
  c->set_reason("TFJobRunning");
  s.mutable_spec()->mutable_replica_specs()->at("Worker").set_replicas(9);  // ignored
  auto v2 = store_->UpdateStatus(s);
  ASSERT_TRUE(v2.ok()) << v2.status();
  ASSERT_EQ(v2->status().conditions_size(), 1);
  EXPECT_EQ(v2->status().conditions(0).type(), "Running");
  EXPECT_EQ(v2->spec().replica_specs().at("Worker").replicas(), 1);
  EXPECT_NE(v2->metadata().resource_version(), v1->metadata().resource_version());
  EXPECT_EQ(store_->UpdateStatus(s).status().code(), absl::StatusCode::kAborted);  // stale

  // A metadata update keeps the status.
  api::v1::TrainingJob labelled = *v2;
  (*labelled.mutable_metadata()->mutable_labels())["k"] = "v";
  labelled.clear_status();
  auto v3 = store_->Update(labelled);
  ASSERT_TRUE(v3.ok()) << v3.status();
  EXPECT_EQ(v3->status().conditions_size(), 1);
}

TEST_P(CrJobStoreTest, DeleteChecksTheVersion) {
  auto job = store_->Create(Job("PyTorchJob", ns_, "a"));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(store_->Delete({ns_, "a"}, std::string("1")).code(), absl::StatusCode::kAborted);
  ASSERT_TRUE(store_->Delete({ns_, "a"}, job->metadata().resource_version()).ok());
  EXPECT_TRUE(Eventually([&] { return absl::IsNotFound(store_->Get({ns_, "a"}).status()); }));
  EXPECT_EQ(store_->Delete({ns_, "a"}, std::nullopt).code(), absl::StatusCode::kNotFound);
  auto again = store_->Create(Job("PyTorchJob", ns_, "a"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NE(again->metadata().uid(), job->metadata().uid());
}

TEST_P(CrJobStoreTest, EventsAreCoreEventsOfTheJob) {
  ASSERT_TRUE(store_->Create(Job("PyTorchJob", ns_, "a")).ok());
  ASSERT_TRUE(store_->Create(Job("TFJob", ns_, "b")).ok());
  const absl::Time t0 = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()));
  std::vector<JobEvent> events = {{"Normal", "SuccessfulCreatePod", "Created pod: a-worker-0", t0},
                                  {"Warning", "Bad", "something", t0 + absl::Seconds(1)},
                                  {"Normal", "Last", "third", t0 + absl::Seconds(2)}};
  ASSERT_TRUE(store_->AppendEvents({ns_, "a"}, events).ok());
  ASSERT_TRUE(store_->AppendEvent({ns_, "b"}, {"Normal", "Other", "b's", t0}).ok());
  ASSERT_TRUE(store_->FlushEvents(absl::Seconds(30)));  // written off the caller's path
  auto listed = store_->ListEvents({ns_, "a"});
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ((*listed)[0].reason, "SuccessfulCreatePod");
  EXPECT_EQ((*listed)[0].message, "Created pod: a-worker-0");
  EXPECT_EQ((*listed)[0].time, t0);
  EXPECT_EQ((*listed)[1].type, "Warning");
  EXPECT_EQ((*listed)[2].reason, "Last");
  EXPECT_EQ(store_->ListEvents({ns_, "b"})->size(), 1u);
  EXPECT_EQ(store_->AppendEvent({ns_, "zzz"}, {"Normal", "R", "m", t0}).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->ListEvents({ns_, "zzz"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->AppendEvents({ns_, "zzz"}, {}).ok());  // nothing to write: no request

  // The event points at the job.
  k8s::ListOptions lo;
  auto raw = client_->List(k8s::resources::Events(), ns_, lo);
  ASSERT_TRUE(raw.ok());
  bool found = false;
  for (const json& e : raw->items) {
    if (e["reason"] == "Other") {
      found = true;
      EXPECT_EQ(e["involvedObject"]["kind"], "TFJob");
      EXPECT_EQ(e["involvedObject"]["apiVersion"], "kubeflow.org/v1");
      EXPECT_EQ(e["involvedObject"]["name"], "b");
    }
  }
  EXPECT_TRUE(found);
}

// A repeated event is one Event whose count grows (a merge PATCH the real API server takes).
TEST_P(CrJobStoreTest, RepeatedEventsAreOneEventWithACount) {
  ASSERT_TRUE(store_->Create(Job("PyTorchJob", ns_, "r")).ok());
  const absl::Time t0 = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(store_
                    ->AppendEvent({ns_, "r"},
                                  {"Warning", "InvalidSpec", "spec: bad", t0 + absl::Seconds(i)})
                    .ok());
    ASSERT_TRUE(store_->FlushEvents(absl::Seconds(30)));
  }
  auto raw = client_->List(k8s::resources::Events(), ns_, k8s::ListOptions{});
  ASSERT_TRUE(raw.ok()) << raw.status();
  ASSERT_EQ(raw->items.size(), 1u);
  EXPECT_EQ(raw->items[0]["count"], 3);
  EXPECT_EQ(raw->items[0]["message"], "spec: bad");
  EXPECT_EQ(store_->EventCounts().patched, 2u);
  auto listed = store_->ListEvents({ns_, "r"});
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].time, t0 + absl::Seconds(2));  // the last occurrence
}

// An ordinary job's Created events are one Event each, as upstream writes them.
TEST_P(CrJobStoreTest, AThreeReplicaJobGetsOneEventPerPodAndService) {
  ASSERT_TRUE(store_->Create(Job("PyTorchJob", ns_, "three")).ok());
  std::vector<JobEvent> events;
  for (const char* kind : {"Pod", "Service"}) {
    for (int i = 0; i < 3; ++i) {
      events.push_back({"Normal", absl::StrCat("SuccessfulCreate", kind),
                        absl::StrCat("Created ", absl::AsciiStrToLower(kind), ": three-worker-", i),
                        absl::Now()});
    }
  }
  ASSERT_TRUE(store_->AppendEvents({ns_, "three"}, events).ok());
  ASSERT_TRUE(store_->FlushEvents(absl::Seconds(30)));
  auto raw = client_->List(k8s::resources::Events(), ns_, k8s::ListOptions{});
  ASSERT_TRUE(raw.ok()) << raw.status();
  ASSERT_EQ(raw->items.size(), 6u);
  std::map<std::string, int> by_reason;
  for (const json& e : raw->items) {
    EXPECT_EQ(e["count"], 1);
    EXPECT_FALSE(absl::StrContains(e["message"].get<std::string>(), "combined")) << e["message"];
    ++by_reason[e["reason"].get<std::string>()];
  }
  EXPECT_EQ(by_reason["SuccessfulCreatePod"], 3);
  EXPECT_EQ(by_reason["SuccessfulCreateService"], 3);
}

// client-go's rule on the real server: 12 similar events are 9 Events and one combined Event
// of count 3 (created, then raised by a merge PATCH the API server takes).
TEST_P(CrJobStoreTest, TwelveSimilarEventsAreCombinedFromTheTenth) {
  ASSERT_TRUE(store_->Create(Job("PyTorchJob", ns_, "twelve")).ok());
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(
        store_
            ->AppendEvent({ns_, "twelve"}, {"Normal", "SuccessfulCreatePod",
                                            absl::StrCat("Created pod: twelve-", i), absl::Now()})
            .ok());
    // One at a time, so that the aggregate is created and then patched.
    if (i >= 9) {
      ASSERT_TRUE(store_->FlushEvents(absl::Seconds(30)));
    }
  }
  ASSERT_TRUE(store_->FlushEvents(absl::Seconds(30)));
  auto raw = client_->List(k8s::resources::Events(), ns_, k8s::ListOptions{});
  ASSERT_TRUE(raw.ok()) << raw.status();
  ASSERT_EQ(raw->items.size(), 10u);
  int singles = 0;
  for (const json& e : raw->items) {
    const std::string message = e["message"];
    if (absl::StartsWith(message, "(combined from similar events): ")) {
      EXPECT_EQ(e["count"], 3);
      EXPECT_EQ(message, "(combined from similar events): Created pod: twelve-11");
    } else {
      EXPECT_EQ(e["count"], 1);
      ++singles;
    }
  }
  EXPECT_EQ(singles, 9);
  EXPECT_EQ(store_->EventCounts().combined, 3u);
  EXPECT_EQ(store_->EventCounts().patched, 2u);
}

// What is queued at shutdown is written (without the event budget), here 400
// Created events held back by a budget of one per 1000 s.
TEST_P(CrJobStoreTest, StopEventsWritesEverythingQueued) {
  store_.reset();
  CrJobStoreOptions options;
  options.event_recorder.qps = 0.001;
  options.event_recorder.burst = 1;
  auto store = CrJobStore::Create(client_, options);
  ASSERT_TRUE(store.ok()) << store.status();
  store_ = std::move(*store);
  for (int j = 0; j < 50; ++j) {
    const std::string job = absl::StrCat("j", j);
    ASSERT_TRUE(store_->Create(Job("PyTorchJob", ns_, job)).ok());
    std::vector<JobEvent> events;
    for (int i = 0; i < 8; ++i) {
      events.push_back({"Normal", "SuccessfulCreatePod",
                        absl::StrCat("Created pod: ", job, "-worker-", i), absl::Now()});
    }
    ASSERT_TRUE(store_->AppendEvents({ns_, job}, events).ok());
  }
  EXPECT_GT(store_->EventCounts().queued, 0u);
  store_->StopEvents(absl::Seconds(60));
  EXPECT_EQ(store_->EventCounts().dropped, 0u);
  EXPECT_EQ(store_->EventCounts().written, 400u);
  auto raw = client_->List(k8s::resources::Events(), ns_, k8s::ListOptions{});
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(raw->items.size(), 400u);
  // Later events are refused, and counted.
  EXPECT_EQ(store_->AppendEvent({ns_, "j0"}, {"Normal", "R", "late", absl::Now()}).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(store_->EventCounts().dropped, 1u);
}

// The controller's read comes from the watch without a request, and never serves a copy
// older than this store's own last write.
TEST_P(CrJobStoreTest, GetCachedServesTheWatchAndNeverAnOutdatedCopy) {
  ASSERT_TRUE(store_->Create(Job("PyTorchJob", ns_, "c")).ok());
  const int64_t unwatched = counting_->object_reads();
  ASSERT_TRUE(store_->GetCached({ns_, "c"}).ok());      // not watching: a plain Get
  EXPECT_GT(counting_->object_reads() - unwatched, 0);  // one Get per kind
  ASSERT_TRUE(store_->StartWatching(nullptr).ok());
  ASSERT_TRUE(store_->WaitForSync(absl::Seconds(30)));

  const int64_t before = counting_->object_reads();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(store_->GetCached({ns_, "c"}).ok());
  EXPECT_EQ(counting_->object_reads() - before, 0);  // 20 Gets would be 20 requests

  // Our own status write: the next read shows it, however late the watch is.
  for (int round = 0; round < 5; ++round) {
    auto job = store_->GetCached({ns_, "c"});
    ASSERT_TRUE(job.ok()) << job.status();
    api::v1::TrainingJob next = *job;
    next.mutable_status()->add_conditions()->set_type(absl::StrCat("Round", round));
    auto written = store_->UpdateStatus(next);
    ASSERT_TRUE(written.ok()) << written.status();
    auto read = store_->GetCached({ns_, "c"});
    ASSERT_TRUE(read.ok()) << read.status();
    ASSERT_EQ(read->status().conditions_size(), round + 1);
    EXPECT_EQ(read->status().conditions(round).type(), absl::StrCat("Round", round));
  }

  // Another writer (kubectl): seen once the watch delivers it.
  auto raw = client_->Get(k8s::resources::Kubeflow("pytorchjobs", "PyTorchJob"), ns_, "c");
  ASSERT_TRUE(raw.ok()) << raw.status();
  (*raw)["metadata"]["labels"]["team"] = "b";
  ASSERT_TRUE(
      client_->Update(k8s::resources::Kubeflow("pytorchjobs", "PyTorchJob"), ns_, *raw).ok());
  EXPECT_TRUE(Eventually([&] {
    auto read = store_->GetCached({ns_, "c"});
    return read.ok() && read->metadata().labels().count("team") == 1;
  }));

  // Deleted: NotFound, as Get.
  ASSERT_TRUE(store_->Delete({ns_, "c"}, std::nullopt).ok());
  EXPECT_TRUE(Eventually([&] { return absl::IsNotFound(store_->GetCached({ns_, "c"}).status()); }));
}

// One name in two kinds (kubectl can make both): a kind-qualified key, the controller's on
// this backend, reads its own kind from the watch with no request, never an outdated copy,
// and its events land on its own kind's object. The plain name stays ambiguous.
TEST_P(CrJobStoreTest, GetCachedWithAQualifiedKeyReadsItsKindFromTheWatch) {
  auto pt = store_->Create(Job("PyTorchJob", ns_, "same"));
  ASSERT_TRUE(pt.ok()) << pt.status();
  auto tf = store_->Create(Job("TFJob", ns_, "same"));
  ASSERT_TRUE(tf.ok()) << tf.status();
  absl::Mutex mu;
  std::set<std::string> qualified;
  ASSERT_TRUE(store_
                  ->StartWatching([&](const JobChange& c) {
                    if (c.key.namespace_ != ns_) return;  // the real server has others
                    absl::MutexLock lock(&mu);
                    qualified.insert(absl::StrCat(c.key.kind, " ", store::KeyString(c.key)));
                  })
                  .ok());
  ASSERT_TRUE(store_->WaitForSync(absl::Seconds(30)));
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(qualified,
              (std::set<std::string>{absl::StrCat("PyTorchJob ", ns_, "/PyTorchJob/same"),
                                     absl::StrCat("TFJob ", ns_, "/TFJob/same")}));
  }
  EXPECT_EQ(store_->GetCached({ns_, "same"}).status().code(),
            absl::StatusCode::kFailedPrecondition);

  const int64_t before = counting_->object_reads();
  for (int i = 0; i < 20; ++i) {
    auto a = store_->GetCached({ns_, "PyTorchJob/same"});
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->kind(), api::v1::PYTORCH_JOB);
    EXPECT_EQ(a->metadata().uid(), pt->metadata().uid());
    auto b = store_->GetCached({ns_, "tfjobs/same"});  // the plural names the kind too
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->kind(), api::v1::TF_JOB);
    EXPECT_EQ(b->metadata().uid(), tf->metadata().uid());
  }
  EXPECT_EQ(counting_->object_reads() - before, 0);  // 40 Gets would be 40 requests

  // The outdated rule holds for a qualified key: our own write is read back at once.
  auto current = store_->GetCached({ns_, "TFJob/same"});
  ASSERT_TRUE(current.ok()) << current.status();
  api::v1::TrainingJob next = *current;
  next.mutable_status()->add_conditions()->set_type("Mine");
  ASSERT_TRUE(store_->UpdateStatus(next).ok());
  auto read = store_->GetCached({ns_, "TFJob/same"});
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->status().conditions_size(), 1);
  EXPECT_EQ(read->status().conditions(0).type(), "Mine");
  auto other = store_->GetCached({ns_, "PyTorchJob/same"});
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->status().conditions_size(), 0);

  // Events of a qualified key go to that kind's object.
  ASSERT_TRUE(
      store_->AppendEvents({ns_, "TFJob/same"}, {{"Normal", "Mine", "for the TFJob", absl::Now()}})
          .ok());
  ASSERT_TRUE(store_->FlushEvents(absl::Seconds(10)));
  auto events = client_->List(k8s::resources::Events(), ns_, {});
  ASSERT_TRUE(events.ok()) << events.status();
  int mine = 0;
  for (const json& e : events->items) {
    if (e.value("reason", "") != "Mine") continue;
    ++mine;
    EXPECT_EQ(e["involvedObject"]["kind"], "TFJob");
    EXPECT_EQ(e["involvedObject"]["uid"], tf->metadata().uid());
  }
  EXPECT_EQ(mine, 1);
}

// A job the watch would never see is refused before any request, naming the field and the
// watched namespaces.
TEST_P(CrJobStoreTest, CreateOutsideTheWatchedNamespacesIsRefused) {
  CrJobStoreOptions options;
  options.namespaces = {ns_, "team-b"};
  auto store = CrJobStore::Create(client_, options);
  ASSERT_TRUE(store.ok()) << store.status();
  const std::string other = absl::StrCat(ns_, "-other");
  const int64_t before = counting_->calls();
  auto refused = (*store)->Create(Job("PyTorchJob", other, "x"));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(),
            absl::StrCat("metadata.namespace: \"", other,
                         "\" is not watched by this operator (--namespaces ", ns_, ",team-b)"));
  EXPECT_EQ(counting_->calls(), before);
  auto created = (*store)->Create(Job("PyTorchJob", ns_, "x"));
  EXPECT_TRUE(created.ok()) << created.status();
}

// A job no manifest could give is refused before anything is sent, not written in part (its
// encoding must not throw).
TEST_P(CrJobStoreTest, AJobThatIsNoManifestIsRefusedAndNothingIsWritten) {
  api::v1::TrainingJob bad = Job("PyTorchJob", ns_, "bad");
  bad.mutable_metadata()->set_extra_json("[1,2]");
  auto refused = store_->Create(bad);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "metadata.extra_json"))
      << refused.status();
  EXPECT_EQ(store_->Get({ns_, "bad"}).status().code(), absl::StatusCode::kNotFound);

  auto created = store_->Create(Job("PyTorchJob", ns_, "good"));
  ASSERT_TRUE(created.ok()) << created.status();
  api::v1::TrainingJob update = *created;
  (*update.mutable_spec()->mutable_replica_specs())["Worker"].set_template_json("{");
  auto not_updated = store_->Update(update);
  EXPECT_EQ(not_updated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(not_updated.status().message(),
                                "spec.pytorchReplicaSpecs.Worker.template: template_json"))
      << not_updated.status();
  auto got = store_->Get({ns_, "good"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->metadata().resource_version(), created->metadata().resource_version());
}

TEST_P(CrJobStoreTest, ChangeFeedSeesEveryWriter) {
  ASSERT_TRUE(store_->Create(Job("PyTorchJob", ns_, "before")).ok());
  ASSERT_TRUE(store_->StartWatching([&](const JobChange& c) { changes_.Add(c); }).ok());
  EXPECT_EQ(store_->StartWatching(nullptr).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store_->WaitForSync(absl::Seconds(30)));
  EXPECT_TRUE(changes_.Has(absl::StrCat("ADDED ", ns_, "/before")));
  EXPECT_EQ(store_->KnownKinds({ns_, "before"}).size(), 1u);

  auto job = store_->Create(Job("TFJob", ns_, "t"));
  ASSERT_TRUE(job.ok());
  EXPECT_TRUE(Eventually([&] { return changes_.Has(absl::StrCat("ADDED ", ns_, "/t")); }));
  api::v1::TrainingJob s = *job;
  s.mutable_status()->add_conditions()->set_type("Running");
  ASSERT_TRUE(store_->UpdateStatus(s).ok());
  EXPECT_TRUE(Eventually([&] { return changes_.Has(absl::StrCat("MODIFIED ", ns_, "/t")); }));
  ASSERT_TRUE(store_->Delete({ns_, "t"}, std::nullopt).ok());
  EXPECT_TRUE(Eventually([&] { return changes_.Has(absl::StrCat("DELETED ", ns_, "/t")); }));
  EXPECT_TRUE(Eventually([&] { return store_->KnownKinds({ns_, "t"}).empty(); }));

  if (!real()) return;
  // kubectl: apply a manifest, see it through the feed, Get and List; delete it.
  const std::string file = absl::StrCat(::testing::TempDir(), "/kubectl-job.json");
  {
    std::ofstream out(file);
    out << Manifest("PyTorchJob", ns_, "from-kubectl", {{"via", "kubectl"}}).dump();
  }
  std::string out;
  ASSERT_EQ(k8s::testing::RunShell(absl::StrCat(kubectl_, " apply -f '", file, "' 2>&1"), &out), 0)
      << out;
  EXPECT_TRUE(
      Eventually([&] { return changes_.Has(absl::StrCat("ADDED ", ns_, "/from-kubectl")); }));
  auto got = store_->Get({ns_, "from-kubectl"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->kind(), api::v1::PYTORCH_JOB);
  EXPECT_EQ(got->metadata().labels().at("via"), "kubectl");
  // Read with upstream's defaults, though kubectl stored none (no admission on that path).
  EXPECT_EQ(got->spec().replica_specs().at("Worker").restart_policy(), "OnFailure");
  EXPECT_NE(got->spec().replica_specs().at("Worker").template_json().find("pytorchjob-port"),
            std::string::npos);
  store::ListOptions lo;
  lo.label_selector = {{"via", "kubectl"}};
  auto listed = store_->List(lo);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Names(*listed), (std::vector<std::string>{"from-kubectl"}));
  // What coach writes, kubectl reads.
  out.clear();
  ASSERT_EQ(k8s::testing::RunShell(
                absl::StrCat(kubectl_, " get pytorchjobs -n ", ns_, " -o name 2>&1"), &out),
            0)
      << out;
  EXPECT_TRUE(absl::StrContains(out, "pytorchjob.kubeflow.org/before")) << out;
  out.clear();
  ASSERT_EQ(k8s::testing::RunShell(
                absl::StrCat(kubectl_, " delete pytorchjob from-kubectl -n ", ns_, " 2>&1"), &out),
            0)
      << out;
  EXPECT_TRUE(
      Eventually([&] { return changes_.Has(absl::StrCat("DELETED ", ns_, "/from-kubectl")); }));
  EXPECT_EQ(store_->Get({ns_, "from-kubectl"}).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(CrJobStoreTest, ReListReportsVanishedJobs) {
  ASSERT_TRUE(store_->Create(Job("PyTorchJob", ns_, "gone")).ok());
  ASSERT_TRUE(store_->StartWatching([&](const JobChange& c) { changes_.Add(c); }).ok());
  ASSERT_TRUE(store_->WaitForSync(absl::Seconds(30)));
  store_->StopWatching();
  // Deleted while nobody watched: the next list finds it gone.
  ASSERT_TRUE(
      client_->Delete(k8s::resources::Kubeflow("pytorchjobs", "PyTorchJob"), ns_, "gone", {}).ok());
  ASSERT_TRUE(store_->StartWatching([&](const JobChange& c) { changes_.Add(c); }).ok());
  ASSERT_TRUE(store_->WaitForSync(absl::Seconds(30)));
  EXPECT_TRUE(
      Eventually([&] { return changes_.Has(absl::StrCat("DELETED ", ns_, "/gone (no object)")); }));
  EXPECT_TRUE(store_->KnownKinds({ns_, "gone"}).empty());
}

INSTANTIATE_TEST_SUITE_P(Clients, CrJobStoreTest, ::testing::Values("fake", "real"),
                         [](const auto& info) { return info.param; });

// --- the JobStore contract (operator/store/testing), on both clients ---

class CrContractTest : public store::testing::JobStoreContractTest {
 protected:
  virtual k8s::KubeClient* Client() = 0;

  std::unique_ptr<store::JobStore> Init() override {
    client_ = Client();
    if (client_ == nullptr) return nullptr;
    static std::mt19937_64 rng(std::random_device{}());
    prefix_ = absl::StrCat("contract-", rng() % 1000000000);
    CrJobStoreOptions options;
    for (const std::string& name : Namespaces()) {
      const std::string ns = Ns(name);
      absl::StatusOr<json> created =
          client_->Create(k8s::resources::Namespaces(), "", {{"metadata", {{"name", ns}}}});
      EXPECT_TRUE(created.ok()) << created.status();
      // Scoped to the test's own namespaces: List of every namespace sees this test's jobs.
      options.namespaces.push_back(ns);
    }
    options.max_events_listed = 5;
    // The contract's jobs are stored as given: with defaults applied on read, the first
    // Update would write them and count as a spec change (generation 2).
    options.apply_defaults = false;
    auto store = CrJobStore::Create(client_, options);
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return nullptr;
    cr_store_ = store->get();
    return std::move(*store);
  }
  std::string Ns(const std::string& name) const override {
    return absl::StrCat(prefix_, "-", name);
  }
  void FlushEvents() override { EXPECT_TRUE(cr_store_->FlushEvents(absl::Seconds(30))); }
  bool IsLocal() const override { return false; }

  void TearDown() override {
    if (client_ == nullptr || prefix_.empty()) return;
    for (const std::string& name : Namespaces()) {
      (void)client_->Delete(k8s::resources::Namespaces(), "", Ns(name), {});
    }
  }

  k8s::KubeClient* client_ = nullptr;
  CrJobStore* cr_store_ = nullptr;
  std::string prefix_;
};

class CrOnFakeClientContractTest : public CrContractTest {
  k8s::KubeClient* Client() override { return &fake_; }
  k8s::testing::FakeKubeClient fake_;
};
COACH_JOB_STORE_CONTRACT_TESTS(CrOnFakeClientContractTest)

class CrOnApiServerContractTest : public CrContractTest {
  void SetUp() override {
    if (const absl::Status up = kRealApiServer->Up(); !up.ok()) {
      if (RealApiServer::Skippable(up)) GTEST_SKIP() << up;
      FAIL() << up;
    }
    CrContractTest::SetUp();
  }
  k8s::KubeClient* Client() override { return kRealApiServer->client(); }
};
COACH_JOB_STORE_CONTRACT_TESTS(CrOnApiServerContractTest)

}  // namespace
}  // namespace coach::backend::kube
