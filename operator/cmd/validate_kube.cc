// The --backend=kube part of Validate: API client limits, namespaces, leader election and,
// last, the kubeconfig.

#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "operator/cmd/settings.h"

namespace coach::cmd {
namespace {

// A Go-style duration ("15s", "1m30s", "500ms"); an error naming the flag.
bool ParseFlagDuration(const std::string& flag, const std::string& value, absl::Duration* out,
                       std::string* error) {
  if (!absl::ParseDuration(value, out) || *out <= absl::ZeroDuration() ||
      *out == absl::InfiniteDuration()) {
    *error =
        absl::StrCat(flag, ": want a positive duration such as 15s or 1m, got \"", value, "\"");
    return false;
  }
  return true;
}

// A Kubernetes namespace name (RFC 1123 label).
bool IsDnsLabel(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && !(c == '-' && i > 0 && i + 1 < s.size())) return false;
  }
  return true;
}

}  // namespace

absl::Status ValidateKubeFlags(const Flags& flags, Settings* settings) {
  std::vector<std::string>& namespaces = settings->namespaces;
  coach::backend::kube::LeaderElectionConfig& election = settings->election;
  std::string error_text;
  if (!std::isfinite(flags.kube_api_qps) || flags.kube_api_qps > 100000) {
    return UsageError(
        absl::StrCat("--kube-api-qps: must be a number <= 100000 (0: auto, < 0: no limit), got ",
                     flags.kube_api_qps));
  }
  if (flags.kube_api_burst < 1 || flags.kube_api_burst > 100000) {
    return UsageError(
        absl::StrCat("--kube-api-burst: must be in 1..100000, got ", flags.kube_api_burst));
  }
  if (!(flags.kube_event_qps > 0) || flags.kube_event_qps > 100000) {
    return UsageError(
        absl::StrCat("--kube-event-qps: must be in (0, 100000], got ", flags.kube_event_qps));
  }
  if (flags.kube_event_burst < 1 || flags.kube_event_burst > 100000) {
    return UsageError(
        absl::StrCat("--kube-event-burst: must be in 1..100000, got ", flags.kube_event_burst));
  }
  if (!(flags.kube_event_shutdown_grace_s >= 0) || flags.kube_event_shutdown_grace_s > 3600) {
    return UsageError(
        absl::StrCat("--kube-event-shutdown-grace: must be in [0, 3600] seconds, got ",
                     flags.kube_event_shutdown_grace_s));
  }
  // Up to an hour: longer keeps a job's replacement waiting on a node that is not coming back.
  absl::Duration lost_node_grace;
  if (!absl::ParseDuration(flags.lost_node_grace, &lost_node_grace) ||
      lost_node_grace < absl::ZeroDuration() || lost_node_grace > absl::Hours(1)) {
    return UsageError(
        absl::StrCat("--lost-node-grace: want a duration from 0s to 1h such as 2m or 90s, got \"",
                     flags.lost_node_grace, "\""));
  }
  settings->config.lost_node_grace = lost_node_grace;
  // At least a launcher's grace for its workers to stop is needed; past an hour a job whose
  // launchers cannot restart waits longer than recreating its pods takes.
  absl::Duration in_place_timeout;
  if (!absl::ParseDuration(flags.in_place_restart_timeout, &in_place_timeout) ||
      in_place_timeout < absl::Seconds(5) || in_place_timeout > absl::Hours(1)) {
    return UsageError(absl::StrCat(
        "--in-place-restart-timeout: want a duration from 5s to 1h such as 60s or 2m, got \"",
        flags.in_place_restart_timeout, "\""));
  }
  settings->config.in_place_restart_timeout = in_place_timeout;
  for (absl::string_view part : absl::StrSplit(flags.namespaces, ',')) {
    const std::string ns(absl::StripAsciiWhitespace(part));
    if (ns.empty()) continue;
    if (!IsDnsLabel(ns)) {
      return UsageError(
          absl::StrCat("--namespaces: \"", ns, "\" is not a namespace name (RFC 1123 label)"));
    }
    namespaces.push_back(ns);
  }
  if (flags.leader_elect) {
    election.lease_namespace = flags.leader_elect_namespace;
    if (election.lease_namespace.empty()) {
      const char* pod_ns = std::getenv("POD_NAMESPACE");
      election.lease_namespace = pod_ns != nullptr && *pod_ns != '\0' ? pod_ns : "default";
    }
    if (!IsDnsLabel(election.lease_namespace)) {
      return UsageError(absl::StrCat("--leader-elect-namespace: \"", election.lease_namespace,
                                     "\" is not a namespace name"));
    }
    election.lease_name = flags.leader_elect_lease_name;
    if (election.lease_name.empty())
      return UsageError("--leader-elect-lease-name: must not be empty");
    if (!ParseFlagDuration("--leader-elect-lease-duration", flags.leader_elect_lease_duration,
                           &election.lease_duration, &error_text) ||
        !ParseFlagDuration("--leader-elect-renew-deadline", flags.leader_elect_renew_deadline,
                           &election.renew_deadline, &error_text) ||
        !ParseFlagDuration("--leader-elect-retry-period", flags.leader_elect_retry_period,
                           &election.retry_period, &error_text)) {
      return UsageError(error_text);
    }
    if (election.lease_duration <= election.renew_deadline) {
      return UsageError(
          "--leader-elect-lease-duration: must be greater than --leader-elect-renew-deadline");
    }
    if (election.renew_deadline <= election.retry_period * 1.2) {
      return UsageError(
          "--leader-elect-renew-deadline: must be greater than 1.2 x --leader-elect-retry-period");
    }
    election.identity = coach::backend::kube::DefaultIdentity();
  }
  // Last: every flag is checked before the kubeconfig is read.
  std::string kubeconfig = flags.kubeconfig;
  if (const size_t colon = kubeconfig.find(':'); colon != std::string::npos) {
    kubeconfig = kubeconfig.substr(0, colon);  // $KUBECONFIG may be a list: the first file
  }
  absl::StatusOr<coach::kubeclient::KubeConfig> loaded =
      kubeconfig.empty() ? coach::kubeclient::LoadDefaultConfig()
                         : coach::kubeclient::LoadKubeConfigFile(kubeconfig);
  if (!loaded.ok()) {
    return UsageError(absl::StrCat("--kubeconfig (or KUBECONFIG): ", loaded.status().message()));
  }
  settings->kube_config = *std::move(loaded);
  return absl::OkStatus();
}

}  // namespace coach::cmd
