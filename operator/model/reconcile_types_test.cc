#include "operator/model/reconcile_types.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace coach::model {
namespace {

TEST(ParseGangSchedulerTest, NamesTheOperatorsFlagTakes) {
  EXPECT_EQ(*ParseGangScheduler(""), GangScheduler::kNone);
  EXPECT_EQ(*ParseGangScheduler("none"), GangScheduler::kNone);
  EXPECT_EQ(*ParseGangScheduler("volcano"), GangScheduler::kVolcano);
  EXPECT_EQ(*ParseGangScheduler("scheduler-plugins"), GangScheduler::kSchedulerPlugins);
}

TEST(ParseGangSchedulerTest, AnythingElseIsRefusedNamingIt) {
  for (const char* bad : {"Volcano", "kueue", "scheduler_plugins", " none"}) {
    absl::StatusOr<GangScheduler> parsed = ParseGangScheduler(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status()));
    EXPECT_NE(parsed.status().message().find(absl::StrCat("\"", bad, "\"")), std::string::npos)
        << parsed.status();
  }
}

}  // namespace
}  // namespace coach::model
