// The local address plan through the real reconciler: the env the pods get points at
// 127.0.0.1 and at ports reserved for the job, distinct across jobs and stable across
// backend restarts.
#include "operator/backend/local/net/local_address_plan.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/testing/test_dir.h"
#include "operator/backend/local/local_backend.h"
#include "operator/backend/local/store/sqlite_job_store.h"
#include "operator/backend/local/testing/fake_gpu_discovery.h"
#include "operator/model/testing/job_builder.h"
#include "operator/reconcile/plan_job.h"

namespace coach::backend::local {
namespace {

using model::Json;

// Plan tests start no process.
class NoRunner : public ProcessRunner {
 public:
  absl::StatusOr<ProcessHandle> Start(const ProcessSpec&) override {
    return absl::UnimplementedError("no");
  }
  absl::Status Signal(const ProcessHandle&, int) override { return absl::UnimplementedError("no"); }
  absl::StatusOr<PollResult> Poll(const ProcessHandle&) override {
    return absl::UnimplementedError("no");
  }
  absl::StatusOr<PollResult> Stop(const ProcessHandle&, absl::Duration) override {
    return absl::UnimplementedError("no");
  }
  absl::StatusOr<ProcessHandle> Recover(const std::string&) override {
    return absl::NotFoundError("no");
  }
};

class LocalAddressPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::coach::testing::FreshTestDir(
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    auto store = SqliteJobStore::Open(dir_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    backend_ = NewBackend();
  }

  std::unique_ptr<LocalBackend> NewBackend() {
    LocalBackendOptions o;
    o.state_dir = dir_;
    o.store = store_->replicas();
    o.jobs = store_.get();
    o.gpus = &gpus_;
    o.runner = &runner_;
    auto b = LocalBackend::Create(o);
    EXPECT_TRUE(b.ok()) << b.status();
    return b.ok() ? std::move(*b) : nullptr;
  }

  model::Job Admit(model::Job job) {
    auto stored = store_->Create(job);
    EXPECT_TRUE(stored.ok()) << stored.status();
    EXPECT_TRUE(backend_->Admit(*stored).ok());
    return *stored;
  }

  // Pod name -> env name -> value (last wins).
  std::map<std::string, std::map<std::string, std::string>> Render(const model::Job& job) {
    model::ReconcileConfig config;
    config.address_plan = backend_->AddressPlanFor(job);
    auto objects = reconcile::DesiredObjects(job, config);
    EXPECT_TRUE(objects.ok()) << objects.status();
    std::map<std::string, std::map<std::string, std::string>> out;
    if (!objects.ok()) return out;
    for (const model::KubeObject& o : *objects) {
      if (o.kind != "Pod") continue;
      for (const Json& c : o.body["spec"]["containers"]) {
        if (!c.contains("env")) continue;
        for (const Json& e : c["env"]) {
          if (e.contains("value")) out[o.name][e["name"].get<std::string>()] = e["value"];
        }
      }
    }
    return out;
  }

  std::string dir_;
  std::unique_ptr<SqliteJobStore> store_;
  testing::FakeGpuDiscovery gpus_{2};
  NoRunner runner_;
  std::unique_ptr<LocalBackend> backend_;
};

int PortOf(const std::string& addr) {
  std::vector<std::string> parts = absl::StrSplit(addr, ':');
  int port = 0;
  EXPECT_EQ(parts.size(), 2u) << addr;
  EXPECT_EQ(parts[0], "127.0.0.1") << addr;
  EXPECT_TRUE(absl::SimpleAtoi(parts.back(), &port)) << addr;
  return port;
}

TEST_F(LocalAddressPlanTest, TFConfigPointsAtLocalPortsDistinctPerReplica) {
  model::Job job =
      Admit(reconcile::testing::MakeTFJob("ns", "tf").Chief(1).PS(1).Workers(2).Build());
  auto env = Render(job);
  ASSERT_EQ(env.size(), 4u);
  std::set<int> ports;
  Json cluster;
  for (const auto& [pod, vars] : env) {
    ASSERT_TRUE(vars.count("TF_CONFIG")) << pod;
    Json tf = Json::parse(vars.at("TF_CONFIG"));
    if (cluster.is_null()) cluster = tf["cluster"];
    EXPECT_EQ(tf["cluster"], cluster) << "every replica sees the same cluster";
    const std::string type = tf["task"]["type"];
    const int index = tf["task"]["index"];
    // The replica's own address is where it must listen: a reserved port for that pod.
    const int own = PortOf(cluster[type][index]);
    auto plan = backend_->AddressPlanFor(job);
    EXPECT_EQ(plan->Port(job, type == "ps" ? "PS" : (type == "chief" ? "Chief" : "Worker"), index,
                         "tfjob-port", 2222),
              own);
  }
  for (const auto& [type, addrs] : cluster.items()) {
    for (const Json& a : addrs) ports.insert(PortOf(a));
  }
  EXPECT_EQ(ports.size(), 4u) << cluster.dump();
  EXPECT_EQ(ports.count(2222), 0u);
}

TEST_F(LocalAddressPlanTest, PyTorchMasterAddrAndPortAreLocalAndJobsNeverShare) {
  model::Job a = Admit(reconcile::testing::MakePyTorchJob("ns", "a").Master(1).Workers(2).Build());
  model::Job b = Admit(reconcile::testing::MakePyTorchJob("ns", "b").Master(1).Workers(2).Build());
  std::set<std::string> master_ports;
  for (const model::Job& job : {a, b}) {
    auto env = Render(job);
    ASSERT_EQ(env.size(), 3u);
    std::set<std::string> seen;
    for (const auto& [pod, vars] : env) {
      EXPECT_EQ(vars.at("MASTER_ADDR"), "127.0.0.1") << pod;
      EXPECT_EQ(vars.at("PET_MASTER_ADDR"), "127.0.0.1") << pod;
      EXPECT_EQ(vars.at("MASTER_PORT"), vars.at("PET_MASTER_PORT"));
      seen.insert(vars.at("MASTER_PORT"));
    }
    ASSERT_EQ(seen.size(), 1u) << "all replicas of a job agree on the master port";
    EXPECT_NE(*seen.begin(), "23456");
    master_ports.insert(*seen.begin());
  }
  EXPECT_EQ(master_ports.size(), 2u);
  // Every reservation of both jobs is a distinct port.
  auto all = store_->replicas()->ListPortReservations();
  ASSERT_TRUE(all.ok());
  std::set<int> distinct;
  for (const auto& r : *all) distinct.insert(r.port);
  EXPECT_EQ(distinct.size(), all->size());
  EXPECT_EQ(all->size(), 6u);  // pytorchjob-port for each of 3 replicas x 2 jobs
}

TEST_F(LocalAddressPlanTest, DeterministicAcrossBackendRestartsAndAdmitIsIdempotent) {
  model::Job job =
      Admit(reconcile::testing::MakePyTorchJob("ns", "p").Master(1).Workers(1).Build());
  auto before = Render(job);
  ASSERT_TRUE(backend_->Admit(job).ok());
  backend_ = NewBackend();
  EXPECT_EQ(Render(job), before);
  auto all = store_->replicas()->ListPortReservations();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);
}

TEST_F(LocalAddressPlanTest, ElasticRendezvousAndDeclaredExtraPorts) {
  model::Job job =
      Admit(reconcile::testing::MakePyTorchJob("ns", "e")
                .Workers(2)
                .Elastic(1, 2)
                .Template("Worker", R"({"spec":{"containers":[{"name":"pytorch","image":"x",
              "ports":[{"name":"pytorchjob-port","containerPort":23456},
                       {"name":"metrics","containerPort":9090}]}]}})")
                .Build());
  auto env = Render(job);
  ASSERT_EQ(env.size(), 2u);
  auto plan = backend_->AddressPlanFor(job);
  const int rdzv = plan->Port(job, "Worker", 0, "pytorchjob-port", 23456);
  EXPECT_NE(rdzv, 23456);
  for (const auto& [pod, vars] : env) {
    EXPECT_EQ(vars.at("PET_RDZV_ENDPOINT"), absl::StrCat("127.0.0.1:", rdzv)) << pod;
  }
  // Every agent would match 127.0.0.1: Worker 0 alone holds the rendezvous store.
  EXPECT_EQ(env.at("e-worker-0").at("PET_RDZV_CONF"), "keep_alive_interval=1,is_host=true");
  EXPECT_EQ(env.at("e-worker-1").at("PET_RDZV_CONF"), "keep_alive_interval=1,is_host=false");
  EXPECT_NE(plan->Port(job, "Worker", 1, "metrics", 9090), 9090);
  EXPECT_NE(plan->Port(job, "Worker", 0, "metrics", 9090),
            plan->Port(job, "Worker", 1, "metrics", 9090));
  EXPECT_EQ(plan->Port(job, "Worker", 0, "undeclared", 1234), 1234);
  EXPECT_FALSE(plan->PodIPAvailable());
  EXPECT_TRUE(plan->SharedHost());
}

TEST_F(LocalAddressPlanTest, PaddleRootUsesHostAndPortNotPodIP) {
  model::Job job =
      Admit(reconcile::testing::MakePaddleJob("ns", "pd").Master(1).Workers(1).Build());
  auto env = Render(job);
  ASSERT_EQ(env.size(), 2u);
  for (const auto& [pod, vars] : env) {
    ASSERT_TRUE(vars.count("PADDLE_MASTER")) << pod;
    EXPECT_NE(PortOf(vars.at("PADDLE_MASTER")), 36543);
  }
}

TEST_F(LocalAddressPlanTest, AdmitRejectsMoreGpusThanTheHostHas) {
  auto stored = store_->Create(
      reconcile::testing::MakePyTorchJob("ns", "big")
          .Workers(1)
          .Template("Worker", R"({"spec":{"containers":[{"name":"pytorch","image":"x",
              "resources":{"limits":{"nvidia.com/gpu":"3"}}}]}})")
          .Build());
  ASSERT_TRUE(stored.ok());
  absl::Status s = backend_->Admit(*stored);
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_NE(s.message().find("this host has 2"), std::string::npos) << s;
}

}  // namespace
}  // namespace coach::backend::local
