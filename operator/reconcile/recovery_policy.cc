#include "operator/reconcile/recovery_policy.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "operator/model/replicas.h"

namespace coach::reconcile {
namespace {

absl::Status Bad(absl::string_view annotation, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("metadata.annotations[", annotation, "]: ", problem));
}

absl::StatusOr<int> ParseBudget(const std::string& annotation, const std::string& value) {
  int n = 0;
  if (!absl::SimpleAtoi(value, &n) || n < 0 || n > kMaxRestartsLimit ||
      value.find_first_not_of("0123456789") != std::string::npos) {
    return Bad(annotation, absl::StrCat("must be an integer from 0 to ", kMaxRestartsLimit,
                                        ", got \"", value, "\""));
  }
  return n;
}

}  // namespace

absl::StatusOr<RecoveryPolicy> ParseRecoveryPolicy(const model::Job& job,
                                                   const model::ReconcileConfig& config) {
  RecoveryPolicy policy;
  if (config.pytorch_job_scope_default && job.kind() == api::v1::PYTORCH_JOB) {
    policy.scope = RestartScope::kJob;
  }
  if (const std::string* v = AnnotationOf(job, kAnnotationRestartScope)) {
    if (*v == "Job") {
      policy.scope = RestartScope::kJob;
    } else if (*v == "Replica") {
      policy.scope = RestartScope::kReplica;
    } else {
      return Bad(kAnnotationRestartScope,
                 absl::StrCat("must be \"Job\" or \"Replica\", got \"", *v, "\""));
    }
  }
  const auto& rp = job.spec().run_policy();
  if (rp.has_backoff_limit()) policy.max_restarts = rp.backoff_limit();
  if (const std::string* v = AnnotationOf(job, kAnnotationMaxRestarts)) {
    absl::StatusOr<int> n = ParseBudget(kAnnotationMaxRestarts, *v);
    if (!n.ok()) return n.status();
    policy.max_restarts = *n;
  }
  // Sorted, so that the bad annotation named is the same on every call (a protobuf map has no
  // order).
  const std::map<std::string, std::string> annotations(job.metadata().annotations().begin(),
                                                       job.metadata().annotations().end());
  for (const auto& [key, value] : annotations) {
    if (!absl::StartsWith(key, kAnnotationMaxRestartsPrefix)) continue;
    const std::string type_lower = key.substr(sizeof(kAnnotationMaxRestartsPrefix) - 1);
    std::string type;
    std::vector<std::string> lowered;
    for (const std::string& t : ReplicaTypes(job)) {
      lowered.push_back(Lower(t));
      if (Lower(t) == type_lower) type = t;
    }
    if (type.empty()) {
      return Bad(key, absl::StrCat("names no replica type of this job; its types are ",
                                   absl::StrJoin(lowered, ", ")));
    }
    absl::StatusOr<int> n = ParseBudget(key, value);
    if (!n.ok()) return n.status();
    policy.max_restarts_by_type[type] = *n;
  }
  if (const std::string* v = AnnotationOf(job, kAnnotationProgressDeadline)) {
    absl::Duration d;
    if (!absl::ParseDuration(*v, &d) || d < kMinProgressDeadline || d > kMaxProgressDeadline) {
      return Bad(kAnnotationProgressDeadline,
                 absl::StrCat("must be a duration from 10s to 168h (e.g. 90s, 5m, 1h30m), got \"",
                              *v, "\""));
    }
    policy.progress_deadline = d;
  }
  if (const std::string* v = AnnotationOf(job, kAnnotationRestartMode)) {
    if (*v != "InPlace" && *v != "Recreate") {
      return Bad(kAnnotationRestartMode,
                 absl::StrCat("must be \"InPlace\" or \"Recreate\", got \"", *v, "\""));
    }
    const std::string* scope = AnnotationOf(job, kAnnotationRestartScope);
    if (*v == "InPlace" && scope != nullptr && *scope == "Replica") {
      return Bad(kAnnotationRestartMode,
                 absl::StrCat("InPlace restarts the whole job; it needs ", kAnnotationRestartScope,
                              ": Job, not Replica"));
    }
    policy.in_place = *v == "InPlace" && policy.scope == RestartScope::kJob;
  }
  return policy;
}

absl::Status ValidateRecoveryAnnotations(const model::Job& job) {
  return ParseRecoveryPolicy(job, model::ReconcileConfig()).status();
}

bool JobScoped(const model::Job& job, const model::ReconcileConfig& config) {
  absl::StatusOr<RecoveryPolicy> policy = ParseRecoveryPolicy(job, config);
  return policy.ok() && policy->scope == RestartScope::kJob;
}

bool RestartsInPlace(const model::Job& job, const model::ReconcileConfig& config) {
  absl::StatusOr<RecoveryPolicy> policy = ParseRecoveryPolicy(job, config);
  return policy.ok() && policy->in_place && !config.progress_report_address.empty();
}

}  // namespace coach::reconcile
