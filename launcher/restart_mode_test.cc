#include "launcher/restart_mode.h"

#include <gtest/gtest.h>

#include <string>

namespace coach::launcher {
namespace {

TEST(RestartModeTest, RecreateUnlessInPlace) {
  for (const EnvMap& env :
       {EnvMap{}, EnvMap{{"COACH_RESTART_MODE", ""}}, EnvMap{{"COACH_RESTART_MODE", "Recreate"}},
        // Not read outside InPlace: worker_env.h's business.
        EnvMap{{"COACH_RESTART_MODE", "Recreate"}, {"COACH_ATTEMPT", "x"}}}) {
    absl::StatusOr<RestartConfig> c = ParseRestartConfig(env);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->mode, RestartMode::kRecreate);
  }
}

TEST(RestartModeTest, InPlaceWithItsDefaults) {
  absl::StatusOr<RestartConfig> c = ParseRestartConfig({{"COACH_RESTART_MODE", "InPlace"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mode, RestartMode::kInPlace);
  EXPECT_EQ(c->attempt, 0);
  EXPECT_EQ(c->in_place_wait, absl::Seconds(60));
  c = ParseRestartConfig({{"COACH_RESTART_MODE", "InPlace"},
                          {"COACH_ATTEMPT", "1000000"},
                          {"COACH_IN_PLACE_WAIT", "2.5"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->attempt, 1000000);
  EXPECT_EQ(c->in_place_wait, absl::Milliseconds(2500));
}

TEST(RestartModeTest, BadValuesNameTheirVariable) {
  struct Case {
    EnvMap env;
    std::string error;
  };
  const Case cases[] = {
      {{{"COACH_RESTART_MODE", "inplace"}},
       "COACH_RESTART_MODE: \"inplace\" is neither InPlace nor Recreate"},
      {{{"COACH_RESTART_MODE", "Never"}}, "COACH_RESTART_MODE: \"Never\""},
      {{{"COACH_RESTART_MODE", "InPlace"}, {"COACH_ATTEMPT", "-1"}},
       "COACH_ATTEMPT: \"-1\" is not an integer from 0 to 1000000"},
      {{{"COACH_RESTART_MODE", "InPlace"}, {"COACH_ATTEMPT", "1000001"}}, "COACH_ATTEMPT:"},
      {{{"COACH_RESTART_MODE", "InPlace"}, {"COACH_ATTEMPT", "2.0"}}, "COACH_ATTEMPT:"},
      {{{"COACH_RESTART_MODE", "InPlace"}, {"COACH_ATTEMPT", "two"}}, "COACH_ATTEMPT:"},
      {{{"COACH_RESTART_MODE", "InPlace"}, {"COACH_IN_PLACE_WAIT", "0"}},
       "COACH_IN_PLACE_WAIT: \"0\" is not a positive number of seconds"},
      {{{"COACH_RESTART_MODE", "InPlace"}, {"COACH_IN_PLACE_WAIT", "-5"}}, "COACH_IN_PLACE_WAIT:"},
      {{{"COACH_RESTART_MODE", "InPlace"}, {"COACH_IN_PLACE_WAIT", "inf"}}, "COACH_IN_PLACE_WAIT:"},
      {{{"COACH_RESTART_MODE", "InPlace"}, {"COACH_IN_PLACE_WAIT", "60s"}}, "COACH_IN_PLACE_WAIT:"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<RestartConfig> r = ParseRestartConfig(c.env);
    ASSERT_FALSE(r.ok()) << c.error;
    EXPECT_TRUE(absl::IsInvalidArgument(r.status()));
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << r.status();
  }
}

}  // namespace
}  // namespace coach::launcher
