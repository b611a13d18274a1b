#include "operator/backend/local/replica_poller.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/testing/eventually.h"

namespace coach::backend::local {
namespace {

using ::coach::testing::Eventually;

const store::JobKey kJob{"ns", "job"};

// Records the poller's calls to its hooks; `found` is what each poll returns.
class Hooks {
 public:
  std::set<store::JobKey> Poll() {
    absl::MutexLock lock(&mu_);
    ++polls_;
    return std::exchange(found_, {});
  }
  void Wake(const std::set<store::JobKey>& jobs) {
    absl::MutexLock lock(&mu_);
    wakes_.push_back(jobs);
  }
  void FindAtNextPoll(const store::JobKey& job) {
    absl::MutexLock lock(&mu_);
    found_.insert(job);
  }
  int polls() {
    absl::MutexLock lock(&mu_);
    return polls_;
  }
  std::vector<std::set<store::JobKey>> wakes() {
    absl::MutexLock lock(&mu_);
    return wakes_;
  }

 private:
  absl::Mutex mu_;
  int polls_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<store::JobKey> found_ ABSL_GUARDED_BY(mu_);
  std::vector<std::set<store::JobKey>> wakes_ ABSL_GUARDED_BY(mu_);
};

class ReplicaPollerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ends = EndWatcher::Create();
    ASSERT_TRUE(ends.ok()) << ends.status();
    ends_ = std::move(*ends);
  }

  std::unique_ptr<ReplicaPoller> NewPoller(absl::Duration interval) {
    return std::make_unique<ReplicaPoller>(
        ends_.get(), interval, [this] { return hooks_.Poll(); },
        [this](const std::set<store::JobKey>& jobs) { hooks_.Wake(jobs); });
  }

  // A descriptor watched for `job`; closing the returned write end is the replica's end.
  int WatchedPipe(const store::JobKey& job) {
    int p[2];
    EXPECT_EQ(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
    EXPECT_TRUE(ends_->Watch(p[0], job).ok());
    return p[1];
  }

  std::unique_ptr<EndWatcher> ends_;
  Hooks hooks_;
};

TEST_F(ReplicaPollerTest, AnEndWakesItsJobWithoutWaitingForAPoll) {
  auto poller = NewPoller(absl::Hours(1));
  poller->Start();
  close(WatchedPipe(kJob));
  EXPECT_TRUE(Eventually([&] { return !hooks_.wakes().empty(); }));
  ASSERT_EQ(hooks_.wakes().size(), 1u);
  EXPECT_EQ(hooks_.wakes()[0], std::set<store::JobKey>{kJob});
  EXPECT_EQ(hooks_.polls(), 0);
}

TEST_F(ReplicaPollerTest, EveryIntervalItPollsAndWakesOnlyTheJobsThePollFound) {
  auto poller = NewPoller(absl::Milliseconds(10));
  poller->Start();
  EXPECT_TRUE(Eventually([&] { return hooks_.polls() >= 3; }));
  EXPECT_TRUE(hooks_.wakes().empty()) << "nothing ended, nobody woken";

  hooks_.FindAtNextPoll(kJob);
  EXPECT_TRUE(Eventually([&] { return !hooks_.wakes().empty(); }));
  EXPECT_EQ(hooks_.wakes()[0], std::set<store::JobKey>{kJob});
}

TEST_F(ReplicaPollerTest, StopEndsAWaitAtOnceAndStartStartsAgain) {
  auto poller = NewPoller(absl::Hours(1));
  poller->Start();
  poller->Start();  // running: nothing
  const absl::Time before = absl::Now();
  poller->Stop();
  EXPECT_LT(absl::Now() - before, absl::Seconds(10)) << "not an hour's wait";

  const int write_end = WatchedPipe(kJob);
  close(write_end);
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_TRUE(hooks_.wakes().empty()) << "stopped";
  poller->Start();
  EXPECT_TRUE(Eventually([&] { return !hooks_.wakes().empty(); }));
}

}  // namespace
}  // namespace coach::backend::local
