// Job events of the whole operator on a real control plane, read back
// with kubectl as `kubectl describe` would: one Event per created pod and service as upstream;
// client-go's aggregation from the 10th similar event; every Created event written when the
// operator is stopped (SIGTERM) right after creating many pods; a burst larger than the old
// queue of 1000 loses none.

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "e2e/kube/kube_fixture.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace coach::e2e::kube {
namespace {

using nlohmann::json;

// A PyTorchJob of 1 Master + `workers` Workers whose pods keep running (kwok).
JobManifest Job(const std::string& name, int workers) {
  return JobManifest::PyTorch(name)
      .Replicas({{"Master", 1}, {"Worker", workers}})
      .RestartPolicy("Never")
      .KwokExit(0, 600);
}

std::string Tail(const std::string& log) {
  return log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
}

// Created events of the namespace (or of one job), by reason: occurrences (sum of count),
// Event objects, and how many of them are combined ones.
struct Tally {
  int64_t occurrences = 0;
  int objects = 0;
  int combined = 0;
  int64_t combined_count = 0;
};

class EventsTest : public KubeTest {
 protected:
  std::map<std::string, Tally> CreatedEvents(const std::string& job = "") {
    std::map<std::string, Tally> out;
    CmdResult r = Kubectl({"get", "events", "-n", ns(), "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.exit_code != 0) return out;
    const json listed = json::parse(r.out);  // kept: items below refer into it
    for (const json& e : listed["items"]) {
      const std::string reason = e.value("reason", "");
      if (!absl::StartsWith(reason, "SuccessfulCreate")) continue;
      if (!job.empty() && e["involvedObject"].value("name", "") != job) continue;
      Tally& t = out[reason];
      const int64_t count = e.value("count", 1);
      t.occurrences += count;
      ++t.objects;
      if (absl::StartsWith(e.value("message", ""), "(combined from similar events): ")) {
        ++t.combined;
        t.combined_count += count;
      }
    }
    return out;
  }
  // Waits until the Created events of `job` (of every job: "") number `n` occurrences or more
  // for pods and for services alike; *tally is the last count.
  bool WaitCreatedEvents(const std::string& job, int64_t n, absl::Duration timeout,
                         std::map<std::string, Tally>* tally) {
    return Eventually(
        [&] {
          *tally = CreatedEvents(job);
          return (*tally)["SuccessfulCreatePod"].occurrences >= n &&
                 (*tally)["SuccessfulCreateService"].occurrences >= n;
        },
        timeout, kKubectlPoll);
  }
  size_t Count(const std::string& resource) {
    CmdResult r = Kubectl({"get", resource, "-n", ns(), "-o", "name"});
    if (r.exit_code != 0) return 0;
    size_t n = 0;
    for (char c : r.out) n += c == '\n';
    return n;
  }
  // kubectl create (one POST per job, no apply round trips) in chunks of 50, each well
  // inside kubectl's time limit here.
  void ApplyJobs(const std::string& prefix, int jobs, int workers) {
    for (int first = 0; first < jobs; first += 50) {
      std::string yaml;
      for (int j = first; j < std::min(jobs, first + 50); ++j) {
        absl::StrAppend(&yaml, "---\n", Job(absl::StrCat(prefix, j), workers).Yaml());
      }
      CmdResult r = Kubectl({"create", "-n", ns(), "-f", "-"}, yaml);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
  }
};

TEST_F(EventsTest, AThreeReplicaJobGetsOneEventPerPodAndService) {
  Apply(Job("three", 2));
  std::map<std::string, Tally> t;
  ASSERT_TRUE(WaitCreatedEvents("three", 3, absl::Seconds(90), &t)) << OperatorLogTail();
  for (const char* reason : {"SuccessfulCreatePod", "SuccessfulCreateService"}) {
    EXPECT_EQ(t[reason].occurrences, 3) << reason;
    EXPECT_EQ(t[reason].objects, 3) << reason << ": one Event each, none combined";
    EXPECT_EQ(t[reason].combined, 0) << reason;
  }
  // What kubectl describe shows.
  CmdResult d = Kubectl({"describe", "pytorchjob", "three", "-n", ns()});
  EXPECT_TRUE(absl::StrContains(d.out, "Created pod: three-worker-1")) << d.out;
  EXPECT_FALSE(absl::StrContains(d.out, "combined")) << d.out;
}

// client-go's EventAggregator: 12 similar events are 9 Events plus one combined of count 3.
TEST_F(EventsTest, TwelveSimilarEventsAreCombinedFromTheTenthLikeClientGo) {
  Apply(Job("twelve", 11));
  std::map<std::string, Tally> t;
  ASSERT_TRUE(WaitCreatedEvents("twelve", 12, absl::Seconds(90), &t)) << OperatorLogTail();
  for (const char* reason : {"SuccessfulCreatePod", "SuccessfulCreateService"}) {
    EXPECT_EQ(t[reason].occurrences, 12) << reason;
    EXPECT_EQ(t[reason].objects, 10) << reason;
    EXPECT_EQ(t[reason].combined, 1) << reason;
    EXPECT_EQ(t[reason].combined_count, 3) << reason;
  }
}

// SIGTERM right after 50 jobs x 8 replicas are created: the events still queued (the budget
// of 50/s needs 16 s for these 800) are written during the shutdown.
TEST_F(EventsTest, StoppedRightAfterCreatingEveryCreatedEventIsWritten) {
  ApplyJobs("s", 50, 7);
  ASSERT_TRUE(Eventually([&] { return Count("pods") == 400 && Count("services") == 400; },
                         absl::Seconds(120), kKubectlPoll))
      << OperatorLogTail();
  const std::map<std::string, Tally> before = CreatedEvents();
  const absl::Time begin = absl::Now();
  ASSERT_TRUE(op().Stop(absl::Seconds(60)).ok()) << OperatorLogTail();
  const absl::Duration stopping = absl::Now() - begin;
  const std::map<std::string, Tally> after = CreatedEvents();
  std::fprintf(stderr,
               "[kube-e2e] events: %lld pod + %lld service Created events written before SIGTERM; "
               "the operator stopped in %s\n",
               static_cast<long long>(before.count("SuccessfulCreatePod")
                                          ? before.at("SuccessfulCreatePod").occurrences
                                          : 0),
               static_cast<long long>(before.count("SuccessfulCreateService")
                                          ? before.at("SuccessfulCreateService").occurrences
                                          : 0),
               absl::FormatDuration(stopping).c_str());
  const std::string log = op().Log();
  const size_t at = log.find("at shutdown in");
  if (at != std::string::npos) {
    const size_t from = log.rfind('\n', at);
    std::fprintf(stderr, "[kube-e2e] %s\n",
                 log.substr(from + 1, log.find('\n', at) - from - 1).c_str());
  }
  ASSERT_TRUE(op().Start().ok()) << op().Log();
  for (const char* reason : {"SuccessfulCreatePod", "SuccessfulCreateService"}) {
    ASSERT_TRUE(after.count(reason)) << reason;
    EXPECT_EQ(after.at(reason).occurrences, 400) << reason;
    EXPECT_EQ(after.at(reason).combined, 0) << reason;
  }
  EXPECT_FALSE(absl::StrContains(log, " dropped (")) << Tail(log);
}

// 150 jobs x 8 replicas: 2400 Created events, over the old queue of 1000 (which dropped or
// folded the rest). Here with a budget of 200/s so that the test writes them in ~12 s; the
// default budget writes them the same way in ~48 s.
TEST_F(EventsTest, ABurstLargerThanTheOldQueueLosesNoEvent) {
  ASSERT_TRUE(op().Stop().ok());
  OperatorProcess burst("burst", TestTmpDir(), cp().kubeconfig(),
                        {"--kube-event-qps=200", "--kube-event-burst=200"});
  ASSERT_TRUE(burst.Start().ok()) << burst.Log();
  const absl::Time begin = absl::Now();
  ApplyJobs("b", 150, 7);
  std::map<std::string, Tally> t;
  const bool all = WaitCreatedEvents("", 1200, absl::Seconds(150), &t);
  std::fprintf(stderr, "[kube-e2e] events: %lld + %lld Created events of 150 x 8 in %s\n",
               static_cast<long long>(t["SuccessfulCreatePod"].occurrences),
               static_cast<long long>(t["SuccessfulCreateService"].occurrences),
               absl::FormatDuration(absl::Now() - begin).c_str());
  const std::string log = burst.Log();
  (void)burst.Stop();
  ASSERT_TRUE(op().Start().ok()) << op().Log();
  ASSERT_TRUE(all) << Tail(log);
  for (const char* reason : {"SuccessfulCreatePod", "SuccessfulCreateService"}) {
    EXPECT_EQ(t[reason].occurrences, 1200) << reason;
    EXPECT_EQ(t[reason].objects, 1200) << reason << ": one Event each";
    EXPECT_EQ(t[reason].combined, 0) << reason;
  }
  EXPECT_FALSE(absl::StrContains(log, " dropped (")) << Tail(log);
}

}  // namespace
}  // namespace coach::e2e::kube
