#include "launcher/host_wait.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/testing/fake_clock.h"

namespace coach::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// A fake clock that moves only when the waiter sleeps, and a resolver scripted per host: a
// host resolves once the fake time reaches its entry (absent: never).
struct Fake {
  FakeClock clock{absl::UnixEpoch()};
  std::map<std::string, absl::Duration> resolves_at;
  std::vector<std::string> log;
  int resolve_calls = 0;

  HostWaitOptions Options(absl::Duration timeout) {
    HostWaitOptions o;
    o.timeout = timeout;
    o.log = [this](const std::string& line) { log.push_back(line); };
    o.clock = &clock;
    o.sleep = [this](absl::Duration d) { clock.Advance(d); };
    o.resolve = [this](const std::string& host) -> std::string {
      ++resolve_calls;
      auto it = resolves_at.find(host);
      if (it != resolves_at.end() && clock.Now() - absl::UnixEpoch() >= it->second) return "";
      return "Name or service not known";
    };
    return o;
  }
};

TEST(HostWaitTest, HostsThatResolveAtOnceNeedOneRoundAndNoLog) {
  Fake f;
  f.resolves_at = {{"a", absl::ZeroDuration()}, {"b", absl::ZeroDuration()}};
  EXPECT_TRUE(WaitForHosts({"a", "b"}, f.Options(absl::Seconds(10))).ok());
  EXPECT_EQ(f.resolve_calls, 2);
  EXPECT_TRUE(f.log.empty());
  EXPECT_EQ(f.clock.Now(), absl::UnixEpoch());
}

TEST(HostWaitTest, WaitsUntilEveryHostResolvesAndSaysSo) {
  Fake f;
  f.resolves_at = {{"a", absl::Seconds(2)}, {"b", absl::Seconds(7)}};
  EXPECT_TRUE(WaitForHosts({"a", "b"}, f.Options(absl::Seconds(60))).ok());
  EXPECT_GE(f.clock.Now() - absl::UnixEpoch(), absl::Seconds(7));
  EXPECT_LT(f.clock.Now() - absl::UnixEpoch(), absl::Seconds(8));  // backoff is capped at 1 s
  ASSERT_GE(f.log.size(), 4u);
  EXPECT_EQ(f.log[0], "coach-launch: waiting for a to resolve: Name or service not known");
  EXPECT_EQ(f.log[1], "coach-launch: waiting for b to resolve: Name or service not known");
  EXPECT_THAT(f.log, testing::Contains(HasSubstr("a resolves after 2")));
  EXPECT_THAT(f.log.back(), HasSubstr("b resolves after 7"));
}

TEST(HostWaitTest, ProgressLinesComeAtMostEveryReportInterval) {
  Fake f;  // never resolves
  absl::Status s = WaitForHosts({"peer"}, f.Options(absl::Seconds(30)));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  // The first line, then one per 5 s of the 30 s: never one per attempt.
  std::vector<std::string> progress;
  for (const std::string& l : f.log) {
    if (l.find("so far") != std::string::npos) progress.push_back(l);
  }
  EXPECT_GE(progress.size(), 4u);
  EXPECT_LE(progress.size(), 6u);
  EXPECT_GT(f.resolve_calls, 20);
  EXPECT_THAT(progress[0], HasSubstr("waiting for peer (Name or service not known) to resolve"));
}

TEST(HostWaitTest, TimeoutNamesOnlyTheHostsStillMissing) {
  Fake f;
  f.resolves_at = {{"up", absl::Seconds(1)}};
  absl::Status s = WaitForHosts({"up", "down-1", "down-2"}, f.Options(absl::Seconds(3)));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("down-1 (Name or service not known), down-2"));
  EXPECT_THAT(s.message(), HasSubstr("--peer-timeout 3s"));
  EXPECT_THAT(s.message(), Not(HasSubstr("up ")));
  EXPECT_GE(f.clock.Now() - absl::UnixEpoch(), absl::Seconds(3));
  EXPECT_LT(f.clock.Now() - absl::UnixEpoch(), absl::Seconds(4));  // no sleep past the deadline
}

TEST(HostWaitTest, GetaddrinfoResolvesLocalhostAndNotAnInvalidName) {
  EXPECT_EQ(ResolveWithGetaddrinfo("localhost"), "");
  EXPECT_NE(ResolveWithGetaddrinfo("no-such-host.invalid"), "");  // RFC 6761: never resolves
}

}  // namespace
}  // namespace coach::launcher
