#include "operator/backend/kube/progress_book.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace coach::backend::kube {
namespace {

using Outcome = ProgressBook::Outcome;

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

ProgressReport Step(int64_t step, double loss = 1.0) {
  ProgressReport r;
  r.step = step;
  r.metrics = {{"loss", loss}};
  r.steps_per_second = 2.5;
  return r;
}

ProgressReport Heartbeat(int64_t step) {
  ProgressReport r = Step(step);
  r.heartbeat = true;
  return r;
}

TEST(ProgressBookTest, StampsTheOperatorsTimeAndAnswersOnlyForThatInstance) {
  ProgressBook book;
  auto r = book.Record("ns/job-worker-0", "uid-1", "ns/job", Step(7, 0.5), kT0);
  EXPECT_EQ(r.outcome, Outcome::kAccepted);
  EXPECT_TRUE(r.notify_job);
  auto p = book.Get("ns/job-worker-0", "uid-1");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 7);
  EXPECT_EQ(p->metrics.at("loss"), 0.5);
  EXPECT_EQ(p->steps_per_second, 2.5);
  EXPECT_EQ(p->time, kT0);
  // The pod of that name was recreated: the old instance's report is not the new one's.
  EXPECT_FALSE(book.Get("ns/job-worker-0", "uid-2").has_value());
  EXPECT_FALSE(book.Get("ns/job-worker-1", "uid-1").has_value());
}

TEST(ProgressBookTest, OneReportPerSecondPerPod) {
  ProgressBook book;
  EXPECT_EQ(book.Record("ns/p", "u", "ns/j", Step(1), kT0).outcome, Outcome::kAccepted);
  EXPECT_EQ(book.Record("ns/p", "u", "ns/j", Step(2), kT0 + absl::Milliseconds(999)).outcome,
            Outcome::kTooSoon);
  // A dropped report changes nothing.
  EXPECT_EQ(book.Get("ns/p", "u")->step, 1);
  // Another pod has its own budget.
  EXPECT_EQ(book.Record("ns/q", "v", "ns/j", Step(2), kT0 + absl::Milliseconds(10)).outcome,
            Outcome::kAccepted);
  EXPECT_EQ(book.Record("ns/p", "u", "ns/j", Step(3), kT0 + absl::Seconds(1)).outcome,
            Outcome::kAccepted);
  EXPECT_EQ(book.Get("ns/p", "u")->step, 3);
  // A clock set back does not open the gate.
  EXPECT_EQ(book.Record("ns/p", "u", "ns/j", Step(4), kT0 + absl::Milliseconds(500)).outcome,
            Outcome::kTooSoon);
}

TEST(ProgressBookTest, HeartbeatsAndRepeatsKeepTheProgressTime) {
  ProgressBook book;
  // A first heartbeat: alive, but no progress known.
  book.Record("ns/p", "u", "ns/j", Heartbeat(0), kT0);
  EXPECT_FALSE(book.Get("ns/p", "u").has_value());
  EXPECT_EQ(book.LastSeen("ns/p", "u"), kT0);

  book.Record("ns/p", "u", "ns/j", Step(5), kT0 + absl::Seconds(2));
  book.Record("ns/p", "u", "ns/j", Heartbeat(5), kT0 + absl::Seconds(30));
  ProgressReport same = Step(5);
  same.steps_per_second = 0;
  book.Record("ns/p", "u", "ns/j", same, kT0 + absl::Seconds(60));
  auto p = book.Get("ns/p", "u");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->time, kT0 + absl::Seconds(2));
  EXPECT_EQ(p->steps_per_second, 0);
  EXPECT_EQ(book.LastSeen("ns/p", "u"), kT0 + absl::Seconds(60));

  // A metric that moved is progress, even at the same step.
  book.Record("ns/p", "u", "ns/j", Step(5, 0.25), kT0 + absl::Seconds(62));
  EXPECT_EQ(book.Get("ns/p", "u")->time, kT0 + absl::Seconds(62));
}

ProgressReport Launching(int attempt, model::ObservedPod::Launch::Phase phase, int code = 0) {
  ProgressReport r = Heartbeat(5);
  r.launch = model::ObservedPod::Launch{attempt, phase, code};
  return r;
}

TEST(ProgressBookTest, ALaunchersNewStateIsKeptSoonerAndAsksForAPassAtOnce) {
  using Phase = model::ObservedPod::Launch::Phase;
  ProgressBook book;
  auto first = book.Record("ns/p", "u", "ns/j", Launching(0, Phase::kRunning), kT0);
  EXPECT_EQ(first.outcome, Outcome::kAccepted);
  EXPECT_TRUE(first.notify_job);
  // The same state again within the second: dropped, as any report.
  EXPECT_EQ(
      book.Record("ns/p", "u", "ns/j", Launching(0, Phase::kRunning), kT0 + absl::Milliseconds(200))
          .outcome,
      Outcome::kTooSoon);
  // A new state 100 ms after the last kept report: kept, and the job is told though it was
  // told less than five seconds ago.
  EXPECT_EQ(book.Record("ns/p", "u", "ns/j", Launching(0, Phase::kFailed, 137),
                        kT0 + absl::Milliseconds(50))
                .outcome,
            Outcome::kTooSoon);
  auto failed = book.Record("ns/p", "u", "ns/j", Launching(0, Phase::kFailed, 137),
                            kT0 + absl::Milliseconds(100));
  EXPECT_EQ(failed.outcome, Outcome::kAccepted);
  EXPECT_TRUE(failed.notify_job);
  auto launch = book.Launch("ns/p", "u");
  ASSERT_TRUE(launch.has_value());
  EXPECT_EQ(launch->phase, Phase::kFailed);
  EXPECT_EQ(launch->exit_code, 137);
  EXPECT_FALSE(book.Launch("ns/p", "another-uid").has_value());
  // A report without a launch state leaves the last one.
  EXPECT_EQ(book.Record("ns/p", "u", "ns/j", Step(9), kT0 + absl::Seconds(2)).outcome,
            Outcome::kAccepted);
  EXPECT_EQ(book.Launch("ns/p", "u")->phase, Phase::kFailed);
}

TEST(ProgressBookTest, AsksForAPassAtMostEveryFiveSecondsPerJob) {
  ProgressBook book;
  int notified = 0;
  // 100 pods of one job each report progress every 2 s for a minute.
  for (int t = 0; t < 60; t += 2) {
    for (int i = 0; i < 100; ++i) {
      ProgressBook::Recorded r = book.Record(absl::StrCat("ns/j-worker-", i), "u", "ns/j",
                                             Step(t + 1), kT0 + absl::Seconds(t));
      ASSERT_EQ(r.outcome, Outcome::kAccepted);
      notified += r.notify_job ? 1 : 0;
    }
  }
  // t = 0, 6, 12, ..., 54.
  EXPECT_EQ(notified, 10);
  // Another job is asked for on its own.
  EXPECT_TRUE(
      book.Record("ns/k-worker-0", "u", "ns/k", Step(1), kT0 + absl::Seconds(58)).notify_job);
  // Heartbeats never ask.
  EXPECT_FALSE(book.Record("ns/j-worker-0", "u", "ns/j", Heartbeat(59), kT0 + absl::Seconds(100))
                   .notify_job);
}

TEST(ProgressBookTest, BoundedAndForgetsPodsThatGo) {
  ProgressBookOptions options;
  options.max_pods = 2;
  ProgressBook book(options);
  EXPECT_EQ(book.Record("ns/a", "u", "ns/j", Step(1), kT0).outcome, Outcome::kAccepted);
  EXPECT_EQ(book.Record("ns/b", "u", "ns/k", Step(1), kT0).outcome, Outcome::kAccepted);
  EXPECT_EQ(book.Record("ns/c", "u", "ns/j", Step(1), kT0).outcome, Outcome::kFull);
  EXPECT_EQ(book.size(), 2u);
  EXPECT_EQ(book.jobs(), 2u);
  // Pods already in the book go on reporting.
  EXPECT_EQ(book.Record("ns/a", "u", "ns/j", Step(2), kT0 + absl::Seconds(1)).outcome,
            Outcome::kAccepted);

  book.Forget("ns/a");
  EXPECT_EQ(book.size(), 1u);
  EXPECT_EQ(book.jobs(), 1u);
  EXPECT_EQ(book.Record("ns/c", "u", "ns/j", Step(1), kT0).outcome, Outcome::kAccepted);
  book.Retain([](const std::string& key, const std::string&) { return key == "ns/c"; });
  EXPECT_EQ(book.size(), 1u);
  EXPECT_EQ(book.jobs(), 1u);
  EXPECT_TRUE(book.Get("ns/c", "u").has_value());
  EXPECT_FALSE(book.Get("ns/b", "u").has_value());
}

// The operator marks the pods it deletes itself: their launchers wait for no checkpoint request.
TEST(ProgressBookTest, KnowsWhichInstancesTheOperatorStops) {
  ProgressBook book;
  EXPECT_FALSE(book.Record("ns/p", "u1", "ns/j", Step(3), kT0).stopping);
  book.MarkStopping("ns/p", "other");
  EXPECT_FALSE(book.Record("ns/p", "u1", "ns/j", Step(4), kT0 + absl::Seconds(1)).stopping);
  book.MarkStopping("ns/never-reported", "u");
  EXPECT_EQ(book.size(), 1u);
  book.MarkStopping("ns/p", "u1");
  // Said in every answer from then on, a dropped report's too.
  EXPECT_TRUE(book.Record("ns/p", "u1", "ns/j", Step(5), kT0 + absl::Seconds(2)).stopping);
  const ProgressBook::Recorded dropped =
      book.Record("ns/p", "u1", "ns/j", Step(6), kT0 + absl::Seconds(2));
  EXPECT_EQ(dropped.outcome, Outcome::kTooSoon);
  EXPECT_TRUE(dropped.stopping);
  EXPECT_FALSE(book.Record("ns/never-reported", "u", "ns/j", Step(1), kT0).stopping);
  // A new instance of the name is not.
  EXPECT_FALSE(book.Record("ns/p", "u2", "ns/j", Heartbeat(0), kT0 + absl::Seconds(5)).stopping);
}

TEST(ProgressBookTest, AnotherInstanceStartsAfresh) {
  ProgressBook book;
  book.Record("ns/p", "old", "ns/j", Step(100), kT0);
  // The new instance is not held to the old one's interval, and has no progress until it
  // reports some.
  EXPECT_EQ(book.Record("ns/p", "new", "ns/j", Heartbeat(0), kT0).outcome, Outcome::kAccepted);
  EXPECT_FALSE(book.Get("ns/p", "new").has_value());
  EXPECT_FALSE(book.Get("ns/p", "old").has_value());
  EXPECT_EQ(book.size(), 1u);
  EXPECT_EQ(book.jobs(), 1u);
}

}  // namespace
}  // namespace coach::backend::kube
