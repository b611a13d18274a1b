// One suite, two implementations: FakeKubeClient and RestKubeClient against a real
// kube-apiserver from tools/testenv (skipped when its binaries are not built, failed under
// CI=true), so the fake cannot drift from the apiserver's behaviour.
#include <atomic>
#include <memory>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/eventually.h"
#include "gtest/gtest.h"
#include "operator/backend/kube/client/errors.h"
#include "operator/backend/kube/client/kube_client.h"
#include "operator/backend/kube/client/kube_config.h"
#include "operator/backend/kube/client/reflector.h"
#include "operator/backend/kube/client/rest_kube_client.h"
#include "operator/backend/kube/testing/fake_kube_client.h"
#include "operator/backend/kube/testing/testenv.h"

namespace coach::kubeclient {
namespace {

using nlohmann::json;
using testing::FakeKubeClient;
using testing::TestEnv;

const ResourceDescriptor kCms = resources::ConfigMaps();
const ResourceDescriptor kPods = resources::Pods();
const ResourceDescriptor kServiceAccounts{"",   "v1", "serviceaccounts", "ServiceAccount",
                                          true, false};
const ResourceDescriptor kWidgets{"contract.coach.dev", "v1", "widgets", "Widget", true, true};

json Cm(const std::string& name, json labels = json::object(), json data = {{"k", "v"}}) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"data", data}};
}

// A pod nobody schedules (no such scheduler), so only the test writes it.
json Pod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", {{"app", "contract"}}}}},
          {"spec",
           {{"schedulerName", "coach-contract-nobody"},
            {"containers", json::array({{{"name", "main"}, {"image", "coach.local/none"}}})}}}};
}

using ::coach::testing::Eventually;

class ContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void TearDownTestSuite() {
    real_client_.reset();
    env_.reset();
  }

  void SetUp() override {
    if (GetParam() == "fake") {
      fake_ = std::make_unique<FakeKubeClient>();
      client_ = fake_.get();
    } else {
      if (env_ == nullptr && env_status_.ok()) {
        auto e = TestEnv::Start();
        if (e.ok()) {
          env_ = std::move(*e);
          RestKubeClientOptions o;
          o.qps = 100;
          o.burst = 200;
          auto c = env_->NewClient(o);
          if (c.ok())
            real_client_ = std::move(*c);
          else
            env_status_ = c.status();
        } else {
          env_status_ = e.status();
        }
      }
      if (!env_status_.ok()) {
        if (absl::IsNotFound(env_status_) && !testing::InCi()) GTEST_SKIP() << env_status_;
        FAIL() << env_status_;
      }
      client_ = real_client_.get();
    }
    static std::mt19937_64 rng(std::random_device{}());
    ns_ = absl::StrCat("contract-", rng() % 1000000000);
    auto created = client_->Create(resources::Namespaces(), "", {{"metadata", {{"name", ns_}}}});
    ASSERT_TRUE(created.ok()) << created.status();
  }

  void TearDown() override {
    if (client_ != nullptr && !ns_.empty())
      (void)client_->Delete(resources::Namespaces(), "", ns_, {});
  }

  bool real() const { return GetParam() == "real"; }

  // Pods need the namespace's default ServiceAccount (made by the controller-manager).
  void WaitForServiceAccount() {
    if (!real()) return;
    ASSERT_TRUE(Eventually([&] { return client_->Get(kServiceAccounts, ns_, "default").ok(); }));
  }

  static std::unique_ptr<TestEnv> env_;
  static absl::Status env_status_;
  static std::unique_ptr<RestKubeClient> real_client_;
  std::unique_ptr<FakeKubeClient> fake_;
  KubeClient* client_ = nullptr;
  std::string ns_;
};

std::unique_ptr<TestEnv> ContractTest::env_;
absl::Status ContractTest::env_status_;
std::unique_ptr<RestKubeClient> ContractTest::real_client_;

// The auto client-side limit (--kube-api-qps unset) relies on the API server marking its
// answers with the API Priority and Fairness classification; a real kube-apiserver does.
TEST_P(ContractTest, RealApiServerAnnouncesPriorityAndFairness) {
  if (!real()) GTEST_SKIP() << "a property of the real kube-apiserver";
  RestKubeClientOptions o;
  o.qps = 2;
  o.burst = 1;
  o.lift_limit_on_apf = true;
  auto c = env_->NewClient(o);
  ASSERT_TRUE(c.ok()) << c.status();
  absl::Time start = absl::Now();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*c)->Get(resources::Namespaces(), "", ns_).ok());
  EXPECT_TRUE((*c)->rate_limiter().lifted());
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));  // 10 at 2/s would take 4.5 s
}

TEST_P(ContractTest, CreateAndGet) {
  auto c = client_->Create(kCms, ns_, Cm("a", {{"app", "x"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(NameOf(*c), "a");
  EXPECT_EQ(NamespaceOf(*c), ns_);
  EXPECT_FALSE(UidOf(*c).empty());
  EXPECT_FALSE(ResourceVersionOf(*c).empty());
  EXPECT_TRUE((*c)["metadata"].contains("creationTimestamp"));
  auto g = client_->Get(kCms, ns_, "a");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(UidOf(*g), UidOf(*c));
  EXPECT_EQ(ResourceVersionOf(*g), ResourceVersionOf(*c));
  EXPECT_EQ((*g)["data"], json({{"k", "v"}}));
  EXPECT_EQ((*g)["metadata"]["labels"], json({{"app", "x"}}));
  EXPECT_EQ((*g)["kind"], "ConfigMap");
  EXPECT_EQ((*g)["apiVersion"], "v1");

  json gen = Cm("");
  gen["metadata"].erase("name");
  gen["metadata"]["generateName"] = "gen-";
  auto gc = client_->Create(kCms, ns_, gen);
  ASSERT_TRUE(gc.ok()) << gc.status();
  EXPECT_EQ(NameOf(*gc).rfind("gen-", 0), 0u);
  EXPECT_GT(NameOf(*gc).size(), 4u);
}

TEST_P(ContractTest, CreateErrors) {
  ASSERT_TRUE(client_->Create(kCms, ns_, Cm("a")).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(client_->Create(kCms, ns_, Cm("a")).status()));
  auto bad = client_->Create(kCms, ns_, Cm("Bad_Name"));
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  EXPECT_NE(bad.status().message().find("metadata.name"), std::string::npos) << bad.status();
  json with_rv = Cm("b");
  with_rv["metadata"]["resourceVersion"] = "5";
  auto rv_set = client_->Create(kCms, ns_, with_rv);
  EXPECT_TRUE(absl::IsInvalidArgument(rv_set.status())) << rv_set.status();
  json other_ns = Cm("c");
  other_ns["metadata"]["namespace"] = "elsewhere";
  EXPECT_TRUE(absl::IsInvalidArgument(client_->Create(kCms, ns_, other_ns).status()));
  auto missing = client_->Get(kCms, ns_, "missing");
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
}

TEST_P(ContractTest, UpdateIsConditionalOnResourceVersion) {
  auto c = client_->Create(kCms, ns_, Cm("a"));
  ASSERT_TRUE(c.ok());
  json v1 = *c;
  v1["data"]["k"] = "v1";
  auto u = client_->Update(kCms, ns_, v1);
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ((*u)["data"]["k"], "v1");
  EXPECT_NE(ResourceVersionOf(*u), ResourceVersionOf(*c));
  // Writing from the stale copy conflicts.
  json stale = *c;
  stale["data"]["k"] = "stale";
  auto s = client_->Update(kCms, ns_, stale);
  EXPECT_TRUE(absl::IsAborted(s.status())) << s.status();
  // Without a resourceVersion the update is unconditional.
  json blind = Cm("a", json::object(), {{"k", "blind"}});
  auto b = client_->Update(kCms, ns_, blind);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(UidOf(*b), UidOf(*c));
  EXPECT_TRUE(absl::IsNotFound(client_->Update(kCms, ns_, Cm("missing")).status()));
  // RetryOnConflict: the first attempt writes a stale copy, the retry re-reads.
  int attempts = 0;
  absl::Status rs = RetryOnConflict([&]() -> absl::Status {
    json base = stale;
    if (attempts++ > 0) {
      auto cur = client_->Get(kCms, ns_, "a");
      if (!cur.ok()) return cur.status();
      base = *cur;
    }
    base["data"]["k"] = "retried";
    return client_->Update(kCms, ns_, base).status();
  });
  EXPECT_TRUE(rs.ok()) << rs;
  EXPECT_EQ(attempts, 2);
  EXPECT_EQ((*client_->Get(kCms, ns_, "a"))["data"]["k"], "retried");
}

TEST_P(ContractTest, PatchMergeAndJson) {
  auto c = client_->Create(kCms, ns_, Cm("a", {{"app", "x"}}, {{"k", "v"}, {"drop", "me"}}));
  ASSERT_TRUE(c.ok());
  auto m = client_->Patch(
      kCms, ns_, "a", PatchType::kMerge,
      {{"metadata", {{"labels", {{"tier", "web"}}}}}, {"data", {{"drop", nullptr}, {"n", "1"}}}});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)["metadata"]["labels"], json({{"app", "x"}, {"tier", "web"}}));
  EXPECT_EQ((*m)["data"], json({{"k", "v"}, {"n", "1"}}));
  auto j = client_->Patch(kCms, ns_, "a", PatchType::kJson,
                          json::array({{{"op", "replace"}, {"path", "/data/k"}, {"value", "w"}},
                                       {{"op", "add"}, {"path", "/data/z"}, {"value", "2"}}}));
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ((*j)["data"], json({{"k", "w"}, {"n", "1"}, {"z", "2"}}));
  // A merge patch carrying a stale resourceVersion is a precondition.
  auto stale = client_->Patch(
      kCms, ns_, "a", PatchType::kMerge,
      {{"metadata", {{"resourceVersion", ResourceVersionOf(*c)}}}, {"data", {{"k", "x"}}}});
  EXPECT_TRUE(absl::IsAborted(stale.status())) << stale.status();
  auto fresh = client_->Patch(
      kCms, ns_, "a", PatchType::kMerge,
      {{"metadata", {{"resourceVersion", ResourceVersionOf(*j)}}}, {"data", {{"k", "x"}}}});
  EXPECT_TRUE(fresh.ok()) << fresh.status();
  auto test_fails =
      client_->Patch(kCms, ns_, "a", PatchType::kJson,
                     json::array({{{"op", "test"}, {"path", "/data/k"}, {"value", "nope"}}}));
  EXPECT_TRUE(absl::IsInvalidArgument(test_fails.status())) << test_fails.status();
  EXPECT_TRUE(absl::IsNotFound(
      client_->Patch(kCms, ns_, "missing", PatchType::kMerge, {{"data", {{"a", "b"}}}}).status()));
}

TEST_P(ContractTest, ListSelectorsAndPaging) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(
        client_
            ->Create(kCms, ns_, Cm(absl::StrCat("cm", i), {{"app", i % 2 == 0 ? "even" : "odd"}}))
            .ok());
  }
  auto names = [](const ListResult& l) {
    std::vector<std::string> out;
    for (const auto& i : l.items) {
      if (NameOf(i) != "kube-root-ca.crt") out.push_back(NameOf(i));
    }
    return out;
  };
  ListOptions lo;
  lo.label_selector = "app=even";
  auto even = client_->List(kCms, ns_, lo);
  ASSERT_TRUE(even.ok()) << even.status();
  EXPECT_EQ(names(*even), (std::vector<std::string>{"cm0", "cm2", "cm4"}));
  EXPECT_FALSE(even->resource_version.empty());
  lo.label_selector = "app in (odd),app!=even";
  EXPECT_EQ(names(*client_->List(kCms, ns_, lo)), (std::vector<std::string>{"cm1", "cm3"}));
  lo.label_selector = "";
  lo.field_selector = "metadata.name=cm3";
  EXPECT_EQ(names(*client_->List(kCms, ns_, lo)), (std::vector<std::string>{"cm3"}));
  lo.field_selector = "";
  lo.label_selector = "app";
  lo.limit = 2;
  std::vector<std::string> all;
  int pages = 0;
  while (true) {
    auto page = client_->List(kCms, ns_, lo);
    ASSERT_TRUE(page.ok()) << page.status();
    ++pages;
    EXPECT_LE(page->items.size(), 2u);
    for (const auto& n : names(*page)) all.push_back(n);
    if (page->continue_token.empty()) break;
    lo.continue_token = page->continue_token;
  }
  EXPECT_EQ(all, (std::vector<std::string>{"cm0", "cm1", "cm2", "cm3", "cm4"}));
  EXPECT_EQ(pages, 3);
  ListOptions bad;
  bad.label_selector = "app in (x";
  EXPECT_TRUE(absl::IsInvalidArgument(client_->List(kCms, ns_, bad).status()));
}

TEST_P(ContractTest, DeleteWithPreconditions) {
  auto c = client_->Create(kCms, ns_, Cm("a"));
  ASSERT_TRUE(c.ok());
  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "00000000-0000-0000-0000-000000000000";
  EXPECT_TRUE(absl::IsAborted(client_->Delete(kCms, ns_, "a", wrong_uid)));
  DeleteOptions wrong_rv;
  wrong_rv.precondition_resource_version = "1";
  EXPECT_TRUE(absl::IsAborted(client_->Delete(kCms, ns_, "a", wrong_rv)));
  EXPECT_TRUE(client_->Get(kCms, ns_, "a").ok());
  DeleteOptions right;
  right.precondition_uid = UidOf(*c);
  right.precondition_resource_version = ResourceVersionOf(*c);
  right.propagation = PropagationPolicy::kBackground;
  absl::Status d = client_->Delete(kCms, ns_, "a", right);
  EXPECT_TRUE(d.ok()) << d;
  EXPECT_TRUE(absl::IsNotFound(client_->Get(kCms, ns_, "a").status()));
  EXPECT_TRUE(absl::IsNotFound(client_->Delete(kCms, ns_, "a", {})));
}

TEST_P(ContractTest, FinalizersDelayDeletion) {
  json o = Cm("f");
  o["metadata"]["finalizers"] = {"contract.coach.dev/hold"};
  ASSERT_TRUE(client_->Create(kCms, ns_, o).ok());
  ASSERT_TRUE(client_->Delete(kCms, ns_, "f", {}).ok());
  auto held = client_->Get(kCms, ns_, "f");
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_TRUE((*held)["metadata"].contains("deletionTimestamp"));
  auto p =
      client_->Patch(kCms, ns_, "f", PatchType::kMerge, {{"metadata", {{"finalizers", nullptr}}}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(Eventually([&] { return absl::IsNotFound(client_->Get(kCms, ns_, "f").status()); }));
}

std::string Event(const WatchEvent& e) {
  return absl::StrCat(WatchEventTypeName(e.type), " ", NameOf(e.object));
}

TEST_P(ContractTest, WatchSeesChangesInOrder) {
  ASSERT_TRUE(client_->Create(kCms, ns_, Cm("before", {{"app", "w"}})).ok());
  ListOptions lo;
  lo.label_selector = "app=w";
  auto list = client_->List(kCms, ns_, lo);
  ASSERT_TRUE(list.ok());
  std::vector<std::string> seen;
  std::vector<std::string> rvs;
  std::atomic<bool> started{false};
  absl::Status ws;
  std::thread watcher([&] {
    WatchOptions wo;
    wo.resource_version = list->resource_version;
    wo.label_selector = "app=w";
    wo.timeout_seconds = 30;
    started = true;
    ws = client_->Watch(kCms, ns_, wo, [&](const WatchEvent& e) {
      if (e.type == WatchEventType::kBookmark) return true;
      seen.push_back(Event(e));
      rvs.push_back(e.resource_version);
      return e.type != WatchEventType::kDeleted;
    });
  });
  while (!started) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_TRUE(client_->Create(kCms, ns_, Cm("w1", {{"app", "w"}})).ok());
  ASSERT_TRUE(client_->Create(kCms, ns_, Cm("unrelated", {{"app", "other"}})).ok());
  ASSERT_TRUE(client_->Patch(kCms, ns_, "w1", PatchType::kMerge, {{"data", {{"k", "2"}}}}).ok());
  ASSERT_TRUE(client_->Delete(kCms, ns_, "w1", {}).ok());
  watcher.join();
  EXPECT_TRUE(ws.ok()) << ws;
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED w1", "MODIFIED w1", "DELETED w1"}));
  ASSERT_EQ(rvs.size(), 3u);
  EXPECT_LT(std::stoll(rvs[0]), std::stoll(rvs[1]));
  EXPECT_LT(std::stoll(rvs[1]), std::stoll(rvs[2]));  // the deletion has its own version
}

TEST_P(ContractTest, WatchWithoutResourceVersionStartsWithTheCurrentState) {
  ASSERT_TRUE(client_->Create(kCms, ns_, Cm("x1", {{"app", "s"}})).ok());
  ASSERT_TRUE(client_->Create(kCms, ns_, Cm("x2", {{"app", "s"}})).ok());
  std::vector<std::string> seen;
  WatchOptions wo;
  wo.label_selector = "app=s";
  wo.timeout_seconds = 10;
  absl::Status s = client_->Watch(kCms, ns_, wo, [&](const WatchEvent& e) {
    if (e.type == WatchEventType::kBookmark) return true;
    seen.push_back(Event(e));
    return seen.size() < 2;
  });
  EXPECT_TRUE(s.ok()) << s;
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED x1", "ADDED x2"}));
}

TEST_P(ContractTest, WatchFromAnExpiredVersionIsGone) {
  ASSERT_TRUE(client_->Create(kCms, ns_, Cm("g")).ok());
  if (fake_ != nullptr) fake_->CompactHistory();
  WatchOptions wo;
  wo.resource_version = "1";  // older than the apiserver's watch cache (it starts later)
  wo.timeout_seconds = 10;
  std::vector<std::string> seen;
  absl::Status s = client_->Watch(kCms, ns_, wo, [&](const WatchEvent& e) {
    if (e.type == WatchEventType::kBookmark) return true;
    seen.push_back(Event(e));
    return false;
  });
  if (real() && s.ok()) {
    // Kubernetes 1.33 answers 410 Gone. 1.36 answers a young control plane's watch from
    // resourceVersion 1 with the objects as they are, as ADDED events (seen here, even after
    // etcd was compacted); a client then sees the state, as after a relist.
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen[0].rfind("ADDED ", 0), 0u) << seen[0];
    return;
  }
  EXPECT_TRUE(IsGone(s)) << s;
}

TEST_P(ContractTest, StopEndsAWatch) {
  std::atomic<bool> stop{false};
  WatchOptions wo;
  wo.stop = &stop;
  absl::Status s;
  std::thread t([&] { s = client_->Watch(kCms, ns_, wo, [](const WatchEvent&) { return true; }); });
  absl::SleepFor(absl::Milliseconds(300));
  absl::Time at = absl::Now();
  stop = true;
  t.join();
  EXPECT_TRUE(absl::IsCancelled(s)) << s;
  EXPECT_LT(absl::Now() - at, absl::Seconds(3));
}

TEST_P(ContractTest, PodStatusSubresource) {
  WaitForServiceAccount();
  auto c = client_->Create(kPods, ns_, Pod("p"));
  ASSERT_TRUE(c.ok()) << c.status();
  // UpdateStatus writes .status only.
  // (Pods' status endpoint also takes label changes, a kubelet legacy: not part of the contract.)
  json s = *c;
  s["status"]["message"] = "from-status";
  s["spec"]["activeDeadlineSeconds"] = 5;
  auto us = client_->UpdateStatus(kPods, ns_, s);
  ASSERT_TRUE(us.ok()) << us.status();
  EXPECT_EQ((*us)["status"]["message"], "from-status");
  EXPECT_FALSE((*us)["spec"].contains("activeDeadlineSeconds"));
  // Update ignores .status.
  json u = *us;
  u["status"]["message"] = "from-update";
  u["metadata"]["labels"]["tier"] = "web";
  auto uu = client_->Update(kPods, ns_, u);
  ASSERT_TRUE(uu.ok()) << uu.status();
  EXPECT_EQ((*uu)["status"]["message"], "from-status");
  EXPECT_EQ((*uu)["metadata"]["labels"]["tier"], "web");
  // PatchStatus, conditional when it carries a resourceVersion.
  auto ps = client_->PatchStatus(kPods, ns_, "p", PatchType::kMerge,
                                 {{"status", {{"reason", "Contract"}}}});
  ASSERT_TRUE(ps.ok()) << ps.status();
  EXPECT_EQ((*ps)["status"]["reason"], "Contract");
  auto stale = client_->PatchStatus(kPods, ns_, "p", PatchType::kMerge,
                                    {{"metadata", {{"resourceVersion", ResourceVersionOf(*c)}}},
                                     {"status", {{"reason", "Stale"}}}});
  EXPECT_TRUE(absl::IsAborted(stale.status())) << stale.status();
  auto stale_update = client_->UpdateStatus(kPods, ns_, s);
  EXPECT_TRUE(absl::IsAborted(stale_update.status())) << stale_update.status();
  auto gs = client_->GetStatus(kPods, ns_, "p");
  ASSERT_TRUE(gs.ok()) << gs.status();
  EXPECT_EQ((*gs)["status"]["reason"], "Contract");
  EXPECT_EQ(NameOf(*gs), "p");
  // Delete (an unscheduled pod goes at once) with a uid precondition.
  DeleteOptions d;
  d.precondition_uid = UidOf(*c);
  ASSERT_TRUE(client_->Delete(kPods, ns_, "p", d).ok());
  EXPECT_TRUE(Eventually([&] { return absl::IsNotFound(client_->Get(kPods, ns_, "p").status()); }));
  EXPECT_TRUE(absl::IsNotFound(client_->GetStatus(kPods, ns_, "p").status()));
}

TEST_P(ContractTest, ConfigMapsHaveNoStatusSubresource) {
  ASSERT_TRUE(client_->Create(kCms, ns_, Cm("a")).ok());
  EXPECT_TRUE(absl::IsNotFound(client_->GetStatus(kCms, ns_, "a").status()));
}

TEST_P(ContractTest, LogsOfAMissingPodAreNotFound) {
  auto l = GetLogs(*client_, ns_, "missing", {});
  EXPECT_TRUE(absl::IsNotFound(l.status())) << l.status();
}

TEST_P(ContractTest, CustomResourceWithStatusSubresource) {
  json crd = {
      {"apiVersion", "apiextensions.k8s.io/v1"},
      {"kind", "CustomResourceDefinition"},
      {"metadata", {{"name", "widgets.contract.coach.dev"}}},
      {"spec",
       {{"group", "contract.coach.dev"},
        {"scope", "Namespaced"},
        {"names",
         {{"plural", "widgets"},
          {"singular", "widget"},
          {"kind", "Widget"},
          {"listKind", "WidgetList"}}},
        {"versions", json::array({{{"name", "v1"},
                                   {"served", true},
                                   {"storage", true},
                                   {"subresources", {{"status", json::object()}}},
                                   {"schema",
                                    {{"openAPIV3Schema",
                                      {{"type", "object"},
                                       {"x-kubernetes-preserve-unknown-fields", true}}}}}}})}}}};
  auto made = client_->Create(resources::CustomResourceDefinitions(), "", crd);
  ASSERT_TRUE(made.ok() || absl::IsAlreadyExists(made.status())) << made.status();
  ASSERT_TRUE(Eventually([&] { return client_->List(kWidgets, ns_, {}).ok(); }));
  json w = {{"apiVersion", "contract.coach.dev/v1"},
            {"kind", "Widget"},
            {"metadata", {{"name", "w"}}},
            {"spec", {{"size", 1}}}};
  auto c = client_->Create(kWidgets, ns_, w);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)["metadata"]["generation"], 1);
  json st = *c;
  st["status"] = {{"phase", "Ready"}};
  st["spec"]["size"] = 100;
  st["metadata"]["labels"] = {{"ignored", "yes"}};
  auto us = client_->UpdateStatus(kWidgets, ns_, st);
  ASSERT_TRUE(us.ok()) << us.status();
  EXPECT_EQ((*us)["status"]["phase"], "Ready");
  EXPECT_EQ((*us)["spec"]["size"], 1);  // the status endpoint changes nothing else
  EXPECT_FALSE((*us)["metadata"].contains("labels"));
  EXPECT_EQ((*us)["metadata"]["generation"], 1);  // status writes do not bump the generation
  auto p = client_->Patch(kWidgets, ns_, "w", PatchType::kMerge,
                          {{"spec", {{"size", 2}}}, {"status", nullptr}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)["metadata"]["generation"], 2);
  EXPECT_EQ((*p)["status"]["phase"], "Ready");  // the main resource cannot touch .status
  EXPECT_TRUE(absl::IsAlreadyExists(client_->Create(kWidgets, ns_, w).status()));
}

TEST_P(ContractTest, ReflectorFollowsChanges) {
  ASSERT_TRUE(client_->Create(kCms, ns_, Cm("r0", {{"app", "r"}})).ok());
  std::mutex mu;
  std::map<std::string, std::string> cache;
  ReflectorHandlers h;
  h.on_replace = [&](const std::vector<json>& items, const std::string&) {
    std::lock_guard<std::mutex> l(mu);
    cache.clear();
    for (const auto& i : items) cache[NameOf(i)] = i["data"].value("k", "");
  };
  h.on_event = [&](const WatchEvent& e) {
    std::lock_guard<std::mutex> l(mu);
    if (e.type == WatchEventType::kDeleted)
      cache.erase(NameOf(e.object));
    else
      cache[NameOf(e.object)] = e.object["data"].value("k", "");
  };
  ReflectorOptions o;
  o.label_selector = "app=r";
  Reflector r(client_, kCms, ns_, o, h);
  std::thread t([&] { r.Run(); });
  auto snapshot = [&] {
    std::lock_guard<std::mutex> l(mu);
    return cache;
  };
  EXPECT_TRUE(Eventually([&] { return snapshot().size() == 1; }));
  ASSERT_TRUE(client_->Create(kCms, ns_, Cm("r1", {{"app", "r"}})).ok());
  ASSERT_TRUE(
      client_->Patch(kCms, ns_, "r0", PatchType::kMerge, {{"data", {{"k", "changed"}}}}).ok());
  ASSERT_TRUE(client_->Delete(kCms, ns_, "r1", {}).ok());
  ASSERT_TRUE(client_->Create(kCms, ns_, Cm("r2", {{"app", "r"}})).ok());
  EXPECT_TRUE(Eventually([&] {
    auto s = snapshot();
    return s.size() == 2 && s["r0"] == "changed" && s.count("r2") == 1;
  }));
  r.Stop();
  t.join();
}

INSTANTIATE_TEST_SUITE_P(Impl, ContractTest, ::testing::Values("fake", "real"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace coach::kubeclient
