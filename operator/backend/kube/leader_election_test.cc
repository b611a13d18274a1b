// LeaderElector: step by step with a fake clock, and two electors running against
// FakeKubeClient and against a real kube-apiserver (tools/testenv; skipped when its
// binaries are not built, failed under CI=true).
#include "operator/backend/kube/leader_election.h"

#include <atomic>
#include <memory>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/eventually.h"
#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"
#include "operator/backend/kube/client/kube_config.h"
#include "operator/backend/kube/client/rest_kube_client.h"
#include "operator/backend/kube/testing/fake_kube_client.h"
#include "operator/backend/kube/testing/testenv.h"

namespace coach::backend::kube {
namespace {

namespace k8s = ::coach::kubeclient;
using nlohmann::json;

using ::coach::testing::Eventually;

LeaderElectionConfig Fast(const std::string& ns, const std::string& id) {
  LeaderElectionConfig c;
  c.lease_namespace = ns;
  c.lease_name = "coach-operator";
  c.identity = id;
  c.lease_duration = absl::Seconds(2);
  c.renew_deadline = absl::Milliseconds(1500);
  c.retry_period = absl::Milliseconds(200);
  return c;
}

TEST(LeaderElectionConfigTest, Validates) {
  LeaderElectionConfig c = Fast("ns", "me");
  EXPECT_TRUE(ValidateLeaderElectionConfig(c).ok());
  c.lease_duration = absl::Seconds(1);
  EXPECT_EQ(ValidateLeaderElectionConfig(c).code(), absl::StatusCode::kInvalidArgument);
  c = Fast("ns", "me");
  c.renew_deadline = absl::Milliseconds(220);
  EXPECT_EQ(ValidateLeaderElectionConfig(c).code(), absl::StatusCode::kInvalidArgument);
  c = Fast("", "me");
  EXPECT_EQ(ValidateLeaderElectionConfig(c).code(), absl::StatusCode::kInvalidArgument);
  k8s::testing::FakeKubeClient fake;
  c = Fast("ns", "");
  auto e = LeaderElector::Create(&fake, c);
  ASSERT_TRUE(e.ok());
  EXPECT_NE((*e)->identity().find('_'), std::string::npos);  // host_random
  EXPECT_NE(DefaultIdentity(), DefaultIdentity());
}

TEST(LeaderElectorStepTest, ExpiryIsJudgedFromWhatEachCandidateObserved) {
  k8s::testing::FakeKubeClient fake;
  ::coach::FakeClock clock;
  LeaderElectionConfig ca = Fast("ns", "a");
  ca.clock = &clock;
  LeaderElectionConfig cb = Fast("ns", "b");
  cb.clock = &clock;
  auto a = LeaderElector::Create(&fake, ca);
  auto b = LeaderElector::Create(&fake, cb);
  ASSERT_TRUE(a.ok() && b.ok());

  EXPECT_EQ(*(*a)->TryAcquireOrRenew(), true);  // creates the Lease
  EXPECT_EQ(*(*b)->TryAcquireOrRenew(), false);
  EXPECT_EQ((*b)->observed_holder(), "a");
  auto lease = fake.Get(k8s::resources::Leases(), "ns", "coach-operator");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "a");
  EXPECT_EQ((*lease)["spec"]["leaseDurationSeconds"], 2);
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 0);
  const std::string acquired = (*lease)["spec"]["acquireTime"];

  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(*(*a)->TryAcquireOrRenew(), true);  // renew: acquireTime kept
  lease = fake.Get(k8s::resources::Leases(), "ns", "coach-operator");
  EXPECT_EQ((*lease)["spec"]["acquireTime"], acquired);
  EXPECT_NE((*lease)["spec"]["renewTime"], acquired);
  clock.Advance(absl::Milliseconds(1500));
  // b first sees a's renewal now (2.5s after the first read): that, not the renewTime written
  // by a, starts b's lease duration.
  EXPECT_EQ(*(*b)->TryAcquireOrRenew(), false);

  // a stops renewing; b takes over once the lease duration passed since b saw the change.
  clock.Advance(absl::Milliseconds(1999));
  EXPECT_EQ(*(*b)->TryAcquireOrRenew(), false);
  clock.Advance(absl::Milliseconds(1));
  EXPECT_EQ(*(*b)->TryAcquireOrRenew(), true);
  lease = fake.Get(k8s::resources::Leases(), "ns", "coach-operator");
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "b");
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);
  EXPECT_EQ(*(*a)->TryAcquireOrRenew(), false);  // a sees b fresh
  EXPECT_EQ((*a)->observed_holder(), "b");

  // Two candidates racing on one read: the conditional update lets one win.
  fake.FailNext("Update", absl::AbortedError("conflict"));
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(*(*b)->TryAcquireOrRenew(), false);

  // Errors are returned, not taken for a lost round.
  fake.FailNext("Get", absl::UnavailableError("down"));
  EXPECT_EQ((*b)->TryAcquireOrRenew().status().code(), absl::StatusCode::kUnavailable);
}

class ElectionTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void TearDownTestSuite() {
    real_client_.reset();
    env_.reset();
  }

  void SetUp() override {
    if (GetParam() == "fake") {
      fake_ = std::make_unique<k8s::testing::FakeKubeClient>();
      client_ = fake_.get();
    } else {
      if (env_ == nullptr && env_status_.ok()) {
        auto e = k8s::testing::TestEnv::Start();
        if (e.ok()) {
          env_ = std::move(*e);
          auto c = env_->NewClient();
          if (c.ok())
            real_client_ = std::move(*c);
          else
            env_status_ = c.status();
        } else {
          env_status_ = e.status();
        }
      }
      if (!env_status_.ok()) {
        if (absl::IsNotFound(env_status_) && !k8s::testing::InCi()) GTEST_SKIP() << env_status_;
        FAIL() << env_status_;
      }
      client_ = real_client_.get();
    }
    static std::mt19937_64 rng(std::random_device{}());
    ns_ = absl::StrCat("lease-", rng() % 1000000000);
    ASSERT_TRUE(
        client_->Create(k8s::resources::Namespaces(), "", {{"metadata", {{"name", ns_}}}}).ok());
  }

  void TearDown() override {
    a_.reset();
    b_.reset();
    if (client_ != nullptr && !ns_.empty())
      (void)client_->Delete(k8s::resources::Namespaces(), "", ns_, {});
  }

  std::unique_ptr<LeaderElector> Make(const std::string& id, bool release_on_stop,
                                      std::atomic<int>* started, std::atomic<int>* stopped) {
    LeaderElectionConfig c = Fast(ns_, id);
    c.release_on_stop = release_on_stop;
    c.on_started_leading = [started] { ++*started; };
    c.on_stopped_leading = [stopped] { ++*stopped; };
    auto e = LeaderElector::Create(client_, c);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? std::move(*e) : nullptr;
  }

  // Exactly one of a and b leads for `d` (sampled).
  void ExpectExactlyOneLeads(absl::Duration d) {
    const absl::Time end = absl::Now() + d;
    while (absl::Now() < end) {
      ASSERT_FALSE(a_->IsLeader() && b_->IsLeader()) << "two leaders";
      absl::SleepFor(absl::Milliseconds(10));
    }
    EXPECT_TRUE(a_->IsLeader() != b_->IsLeader());
  }

  std::string Holder() {
    auto lease = client_->Get(k8s::resources::Leases(), ns_, "coach-operator");
    if (!lease.ok()) return "<" + lease.status().ToString() + ">";
    return (*lease)["spec"].value("holderIdentity", "");
  }

  static std::unique_ptr<k8s::testing::TestEnv> env_;
  static absl::Status env_status_;
  static std::unique_ptr<k8s::RestKubeClient> real_client_;
  std::unique_ptr<k8s::testing::FakeKubeClient> fake_;
  k8s::KubeClient* client_ = nullptr;
  std::string ns_;
  std::unique_ptr<LeaderElector> a_, b_;
  std::atomic<int> a_started_{0}, a_stopped_{0}, b_started_{0}, b_stopped_{0};
};

std::unique_ptr<k8s::testing::TestEnv> ElectionTest::env_;
absl::Status ElectionTest::env_status_;
std::unique_ptr<k8s::RestKubeClient> ElectionTest::real_client_;

TEST_P(ElectionTest, ExactlyOneLeadsAndTheOtherTakesOverWhenItStopsRenewing) {
  a_ = Make("a", /*release_on_stop=*/false, &a_started_, &a_stopped_);
  b_ = Make("b", false, &b_started_, &b_stopped_);
  a_->Start();
  ASSERT_TRUE(Eventually([&] { return a_->IsLeader(); }));
  b_->Start();
  ExpectExactlyOneLeads(absl::Seconds(3));  // longer than the lease: a keeps renewing
  EXPECT_TRUE(a_->IsLeader());
  EXPECT_EQ(Holder(), "a");
  EXPECT_EQ(a_started_.load(), 1);

  // a dies without releasing: b takes over within the lease duration (plus a retry period).
  const absl::Time stop = absl::Now();
  a_->Stop();
  EXPECT_EQ(a_stopped_.load(), 1);
  ASSERT_TRUE(Eventually([&] { return b_->IsLeader(); }, absl::Seconds(10)));
  const absl::Duration took = absl::Now() - stop;
  EXPECT_LE(took, absl::Seconds(2) + absl::Milliseconds(800)) << took;
  EXPECT_EQ(Holder(), "b");
  // on_started_leading runs on b's election thread just after IsLeader() turns true.
  EXPECT_TRUE(Eventually([&] { return b_started_.load() == 1; }));
  EXPECT_EQ(b_started_.load(), 1);
  auto lease = client_->Get(k8s::resources::Leases(), ns_, "coach-operator");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);
}

TEST_P(ElectionTest, ReleaseOnStopHandsOverAtOnce) {
  a_ = Make("a", /*release_on_stop=*/true, &a_started_, &a_stopped_);
  b_ = Make("b", true, &b_started_, &b_stopped_);
  a_->Start();
  ASSERT_TRUE(Eventually([&] { return a_->IsLeader(); }));
  b_->Start();
  ExpectExactlyOneLeads(absl::Milliseconds(500));
  const absl::Time stop = absl::Now();
  a_->Stop();
  ASSERT_TRUE(Eventually([&] { return b_->IsLeader(); }, absl::Seconds(10)));
  EXPECT_LT(absl::Now() - stop, absl::Seconds(1));  // no lease duration to wait out
}

TEST_P(ElectionTest, LeaderGivesUpWhenItCannotRenew) {
  if (fake_ == nullptr) GTEST_SKIP() << "needs injected errors";
  std::atomic<bool> down{false};
  fake_->SetErrorHook([&](const k8s::testing::FakeCall& call) {
    return down.load() && call.resource == "leases.coordination.k8s.io"
               ? absl::UnavailableError("down")
               : absl::OkStatus();
  });
  a_ = Make("a", false, &a_started_, &a_stopped_);
  a_->Start();
  ASSERT_TRUE(Eventually([&] { return a_->IsLeader(); }));
  const absl::Time cut = absl::Now();
  down = true;
  ASSERT_TRUE(Eventually([&] { return !a_->IsLeader(); }, absl::Seconds(5)));
  const absl::Duration took = absl::Now() - cut;
  EXPECT_GE(took, absl::Milliseconds(1200)) << took;  // the renew deadline (1.5s) less one period
  EXPECT_LE(took, absl::Milliseconds(2200)) << took;
  EXPECT_EQ(a_stopped_.load(), 1);
  down = false;
  ASSERT_TRUE(Eventually([&] { return a_->IsLeader(); }));  // a candidate again: re-acquires
  EXPECT_EQ(a_started_.load(), 2);
}

INSTANTIATE_TEST_SUITE_P(Clients, ElectionTest, ::testing::Values("fake", "real"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace coach::backend::kube
