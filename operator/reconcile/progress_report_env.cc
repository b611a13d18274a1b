#include "operator/reconcile/progress_report_env.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "operator/reconcile/launcher_wrap.h"
#include "operator/reconcile/recovery_policy.h"

namespace coach::reconcile {

namespace {

// The job's recovery policy when its replicas report progress.
std::optional<RecoveryPolicy> ReportingPolicy(const model::Job& job,
                                              const model::ReconcileConfig& config) {
  if (config.progress_report_address.empty() || !LauncherEnabled(job)) return std::nullopt;
  absl::StatusOr<RecoveryPolicy> policy = ParseRecoveryPolicy(job, config);
  if (!policy.ok() || (policy->scope != RestartScope::kJob && !policy->progress_deadline)) {
    return std::nullopt;
  }
  return *std::move(policy);
}

}  // namespace

bool ReportsProgress(const model::Job& job, const model::ReconcileConfig& config) {
  return ReportingPolicy(job, config).has_value();
}

void AddProgressReporting(const model::Job& job, const model::ReconcileConfig& config,
                          Json& pod_template) {
  const std::optional<RecoveryPolicy> policy = ReportingPolicy(job, config);
  if (!policy) return;
  absl::StatusOr<const api::v1::KindInfo*> kind = KindOf(job);
  if (!kind.ok()) return;
  Json* containers = MutableContainers(pod_template);
  std::optional<size_t> index = DefaultContainerIndex(pod_template, **kind);
  if (containers == nullptr || !index.has_value()) return;
  EnsureArray(pod_template["spec"], "volumes")
      .push_back({{"name", kProgressTokenVolume},
                  {"projected",
                   {{"sources", Json::array({{{"serviceAccountToken",
                                               {{"audience", kProgressTokenAudience},
                                                {"expirationSeconds", kProgressTokenSeconds},
                                                {"path", "token"}}}}})}}}});
  Json& container = (*containers)[*index];
  EnsureArray(container, "volumeMounts")
      .push_back(
          {{"name", kProgressTokenVolume}, {"mountPath", kProgressTokenDir}, {"readOnly", true}});
  AppendEnv(container, kEnvProgressAddress, config.progress_report_address);
  AppendEnv(container, kEnvProgressTokenFile, absl::StrCat(kProgressTokenDir, "/token"));
  if (!config.progress_report_ca_pem.empty()) {
    AppendEnv(container, kEnvProgressCaPem, config.progress_report_ca_pem);
  }
  AppendEnvFieldRef(container, kEnvPodNamespace, "metadata.namespace");
  AppendEnvFieldRef(container, kEnvPodName, "metadata.name");
  if (policy->scope == RestartScope::kJob) {
    AppendEnv(container, kEnvNoticeWait, absl::StrCat(kNoticeWaitSeconds));
  }
}

}  // namespace coach::reconcile
