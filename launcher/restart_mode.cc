#include "launcher/restart_mode.h"

#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace coach::launcher {
absl::StatusOr<RestartConfig> ParseRestartConfig(const EnvMap& env) {
  RestartConfig config;
  const std::string mode = EnvValue(env, "COACH_RESTART_MODE");
  if (mode.empty() || mode == "Recreate") return config;
  if (mode != "InPlace") {
    return absl::InvalidArgumentError(
        absl::StrCat("COACH_RESTART_MODE: \"", mode, "\" is neither InPlace nor Recreate"));
  }
  config.mode = RestartMode::kInPlace;
  if (const std::string a = EnvValue(env, "COACH_ATTEMPT"); !a.empty()) {
    if (!absl::SimpleAtoi(a, &config.attempt) || config.attempt < 0 ||
        config.attempt > kMaxAttempt) {
      return absl::InvalidArgumentError(
          absl::StrCat("COACH_ATTEMPT: \"", a, "\" is not an integer from 0 to ", kMaxAttempt));
    }
  }
  if (const std::string w = EnvValue(env, "COACH_IN_PLACE_WAIT"); !w.empty()) {
    double seconds = 0;
    if (!absl::SimpleAtod(w, &seconds) || !std::isfinite(seconds) || seconds <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("COACH_IN_PLACE_WAIT: \"", w, "\" is not a positive number of seconds"));
    }
    config.in_place_wait = absl::Seconds(seconds);
  }
  return config;
}

}  // namespace coach::launcher
