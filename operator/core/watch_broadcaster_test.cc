#include "operator/core/watch_broadcaster.h"

#include <gtest/gtest.h>

namespace coach::core {
namespace {

api::v1::TrainingJob Job(const std::string& ns, const std::string& name,
                         const std::string& team = "") {
  api::v1::TrainingJob job;
  job.mutable_metadata()->set_namespace_(ns);
  job.mutable_metadata()->set_name(name);
  if (!team.empty()) (*job.mutable_metadata()->mutable_labels())["team"] = team;
  return job;
}

TEST(WatchBroadcasterTest, InitialThenChangesFiltered) {
  WatchBroadcaster b(8);
  WatchFilter filter;
  filter.namespace_ = "a";
  filter.selector = *LabelSelector::Parse("team=nlp");
  auto sub = b.Subscribe(filter, [] {
    return std::vector<api::v1::TrainingJob>{Job("a", "x", "nlp"), Job("a", "y", "cv"),
                                             Job("b", "z", "nlp")};
  });
  ASSERT_TRUE(sub.ok());
  auto ev = (*sub)->Next(absl::Seconds(1));
  ASSERT_TRUE(ev.ok() && ev->has_value());
  EXPECT_EQ((*ev)->type, WatchEventType::kAdded);
  EXPECT_EQ((*ev)->job.metadata().name(), "x");
  b.Publish(WatchEventType::kModified, Job("b", "z", "nlp"));  // other namespace
  b.Publish(WatchEventType::kDeleted, Job("a", "x", "nlp"));
  ev = (*sub)->Next(absl::Seconds(1));
  ASSERT_TRUE(ev.ok() && ev->has_value());
  EXPECT_EQ((*ev)->type, WatchEventType::kDeleted);
  ev = (*sub)->Next(absl::Milliseconds(10));
  ASSERT_TRUE(ev.ok());
  EXPECT_FALSE(ev->has_value());
  EXPECT_EQ(b.size(), 1u);
  (*sub)->Close();
  EXPECT_EQ(b.size(), 0u);
}

TEST(WatchBroadcasterTest, SlowSubscriberIsDroppedNotWaitedFor) {
  WatchBroadcaster b(4);
  int drops = 0;
  size_t count = 0;
  b.SetObservers([&](size_t n) { count = n; }, [&] { ++drops; });
  auto slow = b.Subscribe({}, [] { return std::vector<api::v1::TrainingJob>{}; });
  ASSERT_TRUE(slow.ok());
  EXPECT_EQ(count, 1u);
  for (int i = 0; i < 10; ++i) b.Publish(WatchEventType::kModified, Job("a", "x"));
  EXPECT_EQ(drops, 1);
  EXPECT_EQ(count, 0u);
  // The queued events are still delivered, then the error.
  absl::Status end;
  for (int i = 0; i < 10; ++i) {
    auto ev = (*slow)->Next(absl::Milliseconds(10));
    if (!ev.ok()) {
      end = ev.status();
      break;
    }
  }
  EXPECT_EQ(end.code(), absl::StatusCode::kResourceExhausted);
}

TEST(WatchBroadcasterTest, ShutdownEndsSubscriptions) {
  WatchBroadcaster b;
  auto sub = b.Subscribe({}, [] { return std::vector<api::v1::TrainingJob>{}; });
  ASSERT_TRUE(sub.ok());
  b.Shutdown();
  EXPECT_EQ((*sub)->Next(absl::Seconds(1)).status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(b.Subscribe({}, [] { return std::vector<api::v1::TrainingJob>{}; }).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace coach::core
