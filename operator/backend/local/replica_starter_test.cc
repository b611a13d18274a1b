#include "operator/backend/local/replica_starter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"

namespace coach::backend::local {
namespace {

const store::JobKey kJobA{"ns", "a"};
const store::JobKey kJobB{"ns", "b"};

// How long a wait that must still be blocked is given to return wrongly.
constexpr absl::Duration kBlocked = absl::Milliseconds(100);

TEST(ReplicaStarterTest, WaitForJobWaitsForThatJobsStartsOnly) {
  ReplicaStarter starter(4, nullptr);
  absl::Notification release_a, release_b;
  starter.Queue(kJobA, "a-0", [&] {
    release_a.WaitForNotification();
    return absl::OkStatus();
  });
  starter.Queue(kJobB, "b-0", [&] {
    release_b.WaitForNotification();
    return absl::OkStatus();
  });

  absl::Notification a_idle;
  std::thread waiter([&] {
    starter.WaitForJob(kJobA);
    a_idle.Notify();
  });
  EXPECT_FALSE(a_idle.WaitForNotificationWithTimeout(kBlocked)) << "a's start is in flight";
  release_a.Notify();
  EXPECT_TRUE(a_idle.WaitForNotificationWithTimeout(absl::Seconds(20)));
  waiter.join();
  starter.WaitForJob({"ns", "never-started"});  // nothing in flight: returns at once

  absl::Notification all_idle;
  std::thread all([&] {
    starter.WaitForAll();
    all_idle.Notify();
  });
  EXPECT_FALSE(all_idle.WaitForNotificationWithTimeout(kBlocked)) << "b's start is in flight";
  release_b.Notify();
  EXPECT_TRUE(all_idle.WaitForNotificationWithTimeout(absl::Seconds(20)));
  all.join();
}

TEST(ReplicaStarterTest, AFailedStartIsReportedOnceAndBeforeTheEndedHook) {
  ReplicaStarter* self = nullptr;
  absl::Status seen_by_hook;
  int ended = 0;
  ReplicaStarter starter(1, [&](const store::JobKey& job) {
    EXPECT_EQ(job, kJobA);
    ++ended;
    seen_by_hook = self->TakeError(kJobA, "a-0");
  });
  self = &starter;
  starter.Queue(kJobA, "a-0", [] { return absl::InternalError("no shim"); });
  starter.WaitForJob(kJobA);
  EXPECT_EQ(ended, 1) << "the hook runs before the start counts as ended";
  EXPECT_EQ(seen_by_hook, absl::InternalError("no shim"));
  EXPECT_TRUE(starter.TakeError(kJobA, "a-0").ok()) << "reported once";
}

TEST(ReplicaStarterTest, ErrorsAreKeptPerPodUntilTakenOrForgotten) {
  ReplicaStarter starter(2, nullptr);
  starter.Queue(kJobA, "a-0", [] { return absl::InternalError("a-0"); });
  starter.Queue(kJobA, "a-1", [] { return absl::OkStatus(); });
  starter.Queue(kJobB, "b-0", [] { return absl::InternalError("b-0"); });
  starter.WaitForAll();

  EXPECT_TRUE(starter.TakeError(kJobA, "a-1").ok());
  starter.ForgetErrors(kJobA);
  EXPECT_TRUE(starter.TakeError(kJobA, "a-0").ok()) << "forgotten with its job";
  EXPECT_EQ(starter.TakeError(kJobB, "b-0"), absl::InternalError("b-0"));
}

TEST(ReplicaStarterTest, TheStartsOfOneJobRunInParallel) {
  ReplicaStarter starter(2, nullptr);
  // Each start waits for the other to begin: with one start at a time both would time out.
  std::atomic<int> begun{0};
  auto start = [&] {
    ++begun;
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (begun.load() < 2 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
    return begun.load() == 2 ? absl::OkStatus() : absl::DeadlineExceededError("alone");
  };
  starter.Queue(kJobA, "a-0", start);
  starter.Queue(kJobA, "a-1", start);
  starter.WaitForJob(kJobA);
  EXPECT_TRUE(starter.TakeError(kJobA, "a-0").ok());
  EXPECT_TRUE(starter.TakeError(kJobA, "a-1").ok());
}

TEST(ReplicaStarterTest, DestroyingRunsEveryQueuedStart) {
  std::atomic<int> ran{0};
  absl::Notification release;
  {
    ReplicaStarter starter(1, nullptr);
    // The one thread is busy, so the rest are still queued when the starter is destroyed.
    starter.Queue(kJobA, "first", [&] {
      release.WaitForNotification();
      ++ran;
      return absl::OkStatus();
    });
    for (int i = 0; i < 10; ++i) {
      starter.Queue(kJobA, "p", [&] {
        ++ran;
        return absl::OkStatus();
      });
    }
    release.Notify();
  }
  EXPECT_EQ(ran.load(), 11);
}

}  // namespace
}  // namespace coach::backend::local
