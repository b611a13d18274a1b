// Two coach-operators with --leader-elect and a short lease on a real control plane:
// exactly one leads (the Lease names it, only its log says it leads), the job's pods are
// made once; kill -9 of the leader -> the other takes over within the lease duration and
// the job completes with the same pods. A start that fails after the campaign began exits 1.

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "e2e/kube/kube_fixture.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace coach::e2e::kube {
namespace {

using nlohmann::json;

// This binary starts its own operators.
const bool kNoSuiteOperator = (KubeTest::StartSuiteOperatorForTests() = false, true);

constexpr char kLease[] = "coach-e2e-leader";

class LeaderElectionTest : public KubeTest {
 protected:
  std::unique_ptr<OperatorProcess> Candidate(const std::string& name) {
    return std::make_unique<OperatorProcess>(
        name, TestTmpDir(), cp().kubeconfig(),
        std::vector<std::string>{
            "--leader-elect", "--leader-elect-namespace=default",
            absl::StrCat("--leader-elect-lease-name=", kLease), "--leader-elect-lease-duration=4s",
            "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=1s"});
  }
  std::string Holder() {
    CmdResult r =
        Kubectl({"get", "lease", kLease, "-n", "default", "-o", "jsonpath={.spec.holderIdentity}"});
    return r.exit_code == 0 ? r.out : "";
  }
  static bool Leads(const OperatorProcess& op) { return absl::StrContains(op.Log(), "now leads"); }
};

TEST_F(LeaderElectionTest, OneLeaderAndTakeOverAfterKill9) {
  ASSERT_TRUE(kNoSuiteOperator);
  std::unique_ptr<OperatorProcess> a = Candidate("candidate-a");
  std::unique_ptr<OperatorProcess> b = Candidate("candidate-b");
  ASSERT_TRUE(a->Start().ok()) << a->Log();
  ASSERT_TRUE(b->Start().ok()) << b->Log();
  ASSERT_TRUE(Eventually([&] { return Leads(*a) || Leads(*b); }, absl::Seconds(30), kKubectlPoll))
      << a->Log() << b->Log();
  absl::SleepFor(absl::Seconds(2));
  ASSERT_NE(Leads(*a), Leads(*b)) << "exactly one must lead\n" << a->Log() << b->Log();
  OperatorProcess* leader = Leads(*a) ? a.get() : b.get();
  OperatorProcess* follower = Leads(*a) ? b.get() : a.get();
  const std::string holder = Holder();
  EXPECT_TRUE(absl::StrContains(leader->Log(), holder + " now leads")) << holder;
  EXPECT_FALSE(absl::StrContains(follower->Log(), holder)) << holder;

  Apply(JobManifest::PyTorch("le")
            .Replicas({{"Master", 1}, {"Worker", 1}})
            .RestartPolicy("Never")
            .KwokExit(0, 12));
  std::map<std::string, std::string> uids;
  ASSERT_TRUE(Eventually(
      [&] {
        uids = PodUids("le");
        return uids.size() == 2;
      },
      absl::Seconds(60), kKubectlPoll));
  ASSERT_TRUE(WaitCondition("pytorchjobs", "le", "Running"));
  EXPECT_FALSE(Leads(*follower)) << follower->Log();
  // Every replica serves the API: the follower, whose backend has no caches, describes the
  // job's replicas from the API server.
  CmdResult described =
      RunCoach(follower->server(), {"describe", "le", "-n", ns()}, "", absl::Seconds(30));
  EXPECT_EQ(described.exit_code, 0) << described.out << described.err;
  EXPECT_TRUE(absl::StrContains(described.out, "le-master-0")) << described.out;
  EXPECT_TRUE(absl::StrContains(described.out, "le-worker-0")) << described.out;

  leader->Kill9();
  const absl::Time killed = absl::Now();
  ASSERT_TRUE(Eventually([&] { return Leads(*follower); }, absl::Seconds(30), kKubectlPoll))
      << follower->Log();
  const absl::Duration takeover = absl::Now() - killed;
  std::fprintf(stderr, "[kube-e2e] leader killed; %s took over after %s (lease 4 s)\n",
               follower->name().c_str(), absl::FormatDuration(takeover).c_str());
  EXPECT_LE(takeover, absl::Seconds(4 + 1 + 3));  // lease + retry period + polling slack
  EXPECT_NE(Holder(), holder);

  std::optional<json> j = WaitCondition("pytorchjobs", "le", "Succeeded", absl::Seconds(60));
  ASSERT_TRUE(j);
  EXPECT_EQ(PodUids("le"), uids);
  b->Kill9();
  a->Kill9();
}

// A start-up step that fails once the lease campaign has begun (here the gRPC port is taken)
// ends the process with exit 1 and the reason, whether or not the gate's thread had won the
// lease and begun starting the controller: never an abort on that thread.
TEST_F(LeaderElectionTest, AStartThatFailsAfterTheCampaignBeganExits1) {
  const int holder = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(holder, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(holder, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int taken = ntohs(addr.sin_port);
  const std::string state = TestTmpDir() + "/start-fails";
  ASSERT_EQ(mkdir(state.c_str(), 0755), 0);

  for (int round = 0; round < 3; ++round) {  // the race between the two threads, more than once
    CmdResult r = RunCommand(
        {Runfile("operator/coach-operator"), "--backend=kube", "--kubeconfig=" + cp().kubeconfig(),
         "--state-dir=" + state, "--api-auth=none", absl::StrCat("--listen=127.0.0.1:", taken),
         absl::StrCat("--http-listen=127.0.0.1:", FreePort()), "--leader-elect",
         "--leader-elect-namespace=default", "--leader-elect-lease-name=coach-e2e-start-fails",
         "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s",
         "--leader-elect-retry-period=1s"},
        "", absl::Seconds(60));
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(absl::StrContains(r.out + r.err, "--listen")) << r.out << r.err;
  }
  close(holder);
}

}  // namespace
}  // namespace coach::e2e::kube
