#include "operator/backend/local/end_watcher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "absl/time/clock.h"

namespace coach::backend::local {
namespace {

store::JobKey Job(const std::string& name) { return {"ns", name, ""}; }

TEST(EndWatcherTest, ReportsAJobWhenItsDescriptorReadsEndOfFile) {
  auto watcher = EndWatcher::Create();
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  int a[2], b[2];
  ASSERT_EQ(pipe2(a, O_CLOEXEC | O_NONBLOCK), 0);
  ASSERT_EQ(pipe2(b, O_CLOEXEC | O_NONBLOCK), 0);
  ASSERT_TRUE((*watcher)->Watch(a[0], Job("a")).ok());
  ASSERT_TRUE((*watcher)->Watch(b[0], Job("b")).ok());
  EXPECT_EQ((*watcher)->Watched(), 2u);

  EXPECT_TRUE((*watcher)->Wait(absl::Milliseconds(20)).empty());  // both still open
  close(a[1]);
  std::vector<store::JobKey> ended = (*watcher)->Wait(absl::Seconds(5));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].name, "a");
  EXPECT_EQ((*watcher)->Watched(), 1u);
  EXPECT_TRUE((*watcher)->Wait(absl::Milliseconds(20)).empty());  // reported once
  close(b[1]);
}

TEST(EndWatcherTest, ADescriptorThatEndedBeforeItWasWatchedIsReported) {
  auto watcher = EndWatcher::Create();
  ASSERT_TRUE(watcher.ok());
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
  close(p[1]);
  ASSERT_TRUE((*watcher)->Watch(p[0], Job("early")).ok());
  std::vector<store::JobKey> ended = (*watcher)->Wait(absl::Seconds(5));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].name, "early");
}

TEST(EndWatcherTest, WakeEndsAWaitWithNothing) {
  auto watcher = EndWatcher::Create();
  ASSERT_TRUE(watcher.ok());
  const absl::Time start = absl::Now();
  std::thread waker([&] {
    absl::SleepFor(absl::Milliseconds(50));
    (*watcher)->Wake();
  });
  EXPECT_TRUE((*watcher)->Wait(absl::Seconds(30)).empty());
  waker.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
}

}  // namespace
}  // namespace coach::backend::local
