#include "launcher/notice_hold.h"

#include <gtest/gtest.h>

#include <csignal>

#include "common/testing/fake_clock.h"

namespace coach::launcher {
namespace {

// What the hold looks at, set by each test.
struct World {
  bool stopping = false;
  bool busy = false;
  int64_t newest = 0;
  int hurried = 0;
  absl::Duration every;
  NoticeSources Sources() {
    return {[this](absl::Duration d) {
              ++hurried;
              every = d;
            },
            [this] { return stopping; }, [this] { return busy; }, [this] { return newest; }};
  }
};

TEST(NoticeHoldTest, WaitsForARequestAndGoesOnOnceItIsAnswered) {
  FakeClock clock;
  World w;
  w.newest = 3;  // an earlier notice's request, answered long ago
  NoticeHold hold(absl::Seconds(5), w.Sources(), &clock);
  std::optional<std::string> why = hold.Begin(SIGTERM);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why,
            "holding it up to 5s for the operator's checkpoint request, should this be a "
            "notice");
  EXPECT_EQ(w.hurried, 1);
  EXPECT_EQ(w.every, absl::Milliseconds(250));
  clock.Advance(absl::Seconds(1));
  EXPECT_TRUE(hold.Holding());
  // The request comes and is in the workers' hands: held past the wait, until answered.
  w.busy = true;
  w.newest = 4;
  clock.Advance(absl::Seconds(10));
  EXPECT_TRUE(hold.Holding());
  w.busy = false;
  EXPECT_FALSE(hold.Holding());
}

TEST(NoticeHoldTest, ARequestInHandAtTheSignalIsWaitedFor) {
  FakeClock clock;
  World w;
  w.busy = true;
  w.newest = 7;
  NoticeHold hold(absl::Seconds(5), w.Sources(), &clock);
  std::optional<std::string> why = hold.Begin(SIGTERM);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why,
            "holding it until the workers answer the checkpoint request in hand (checkpoint "
            "on notice)");
  clock.Advance(absl::Seconds(1));
  EXPECT_TRUE(hold.Holding());
  w.busy = false;
  EXPECT_FALSE(hold.Holding());
}

TEST(NoticeHoldTest, WithoutARequestItGoesOnAfterTheWait) {
  FakeClock clock;
  World w;
  NoticeHold hold(absl::Seconds(5), w.Sources(), &clock);
  ASSERT_TRUE(hold.Begin(SIGTERM).has_value());
  clock.Advance(absl::Seconds(4));
  EXPECT_TRUE(hold.Holding());
  clock.Advance(absl::Seconds(1));
  EXPECT_FALSE(hold.Holding());
}

TEST(NoticeHoldTest, APodTheOperatorStopsIsNotHeld) {
  FakeClock clock;
  World w;
  w.stopping = true;
  NoticeHold hold(absl::Seconds(5), w.Sources(), &clock);
  EXPECT_FALSE(hold.Begin(SIGTERM).has_value());
  EXPECT_EQ(w.hurried, 0);
  // Told so while holding.
  World later;
  NoticeHold held(absl::Seconds(5), later.Sources(), &clock);
  ASSERT_TRUE(held.Begin(SIGTERM).has_value());
  later.stopping = true;
  EXPECT_FALSE(held.Holding());
}

TEST(NoticeHoldTest, OnlySigtermAndOnlyWithAWaitAndNeverForever) {
  FakeClock clock;
  World w;
  EXPECT_FALSE(NoticeHold(absl::Seconds(5), w.Sources(), &clock).Begin(SIGINT).has_value());
  EXPECT_FALSE(NoticeHold(absl::ZeroDuration(), w.Sources(), &clock).Begin(SIGTERM).has_value());
  NoticeHold hold(absl::Seconds(5), w.Sources(), &clock);
  ASSERT_TRUE(hold.Begin(SIGTERM).has_value());
  w.busy = true;  // a request whose answers never come
  clock.Advance(absl::Seconds(5) + kMaxNoticeHold - absl::Seconds(1));
  EXPECT_TRUE(hold.Holding());
  clock.Advance(absl::Seconds(1));
  EXPECT_FALSE(hold.Holding());
}

TEST(NoticeHoldTest, TheWaitIsWholeSecondsUpToAMinute) {
  EXPECT_EQ(*ParseNoticeWait({}), absl::ZeroDuration());
  EXPECT_EQ(*ParseNoticeWait({{"COACH_NOTICE_WAIT", ""}}), absl::ZeroDuration());
  EXPECT_EQ(*ParseNoticeWait({{"COACH_NOTICE_WAIT", "5"}}), absl::Seconds(5));
  EXPECT_EQ(*ParseNoticeWait({{"COACH_NOTICE_WAIT", "60"}}), absl::Seconds(60));
  for (const char* bad : {"61", "-1", "5s", "x"}) {
    absl::StatusOr<absl::Duration> wait = ParseNoticeWait({{"COACH_NOTICE_WAIT", bad}});
    ASSERT_FALSE(wait.ok()) << bad;
    EXPECT_EQ(wait.status().message(),
              std::string("COACH_NOTICE_WAIT=") + bad + ": want whole seconds in 0..60");
  }
}

}  // namespace
}  // namespace coach::launcher
