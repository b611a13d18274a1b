#include "operator/model/reconcile_types.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace coach::model {

absl::StatusOr<GangScheduler> ParseGangScheduler(std::string_view name) {
  if (name.empty() || name == "none") return GangScheduler::kNone;
  if (name == "volcano") return GangScheduler::kVolcano;
  if (name == "scheduler-plugins") return GangScheduler::kSchedulerPlugins;
  return absl::InvalidArgumentError(
      absl::StrCat("must be none, volcano or scheduler-plugins, got \"", std::string(name), "\""));
}

}  // namespace coach::model
