#include "operator/backend/kube/client/kube_client.h"

#include <random>
#include <thread>

#include "absl/time/clock.h"

namespace coach::kubeclient {

const char* WatchEventTypeName(WatchEventType t) {
  switch (t) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "?";
}

const char* PatchContentType(PatchType t) {
  switch (t) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
  }
  return "application/merge-patch+json";
}

nlohmann::json DeleteOptionsBody(const DeleteOptions& options) {
  nlohmann::json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (options.precondition_uid.has_value()) {
    body["preconditions"]["uid"] = *options.precondition_uid;
  }
  if (options.precondition_resource_version.has_value()) {
    body["preconditions"]["resourceVersion"] = *options.precondition_resource_version;
  }
  switch (options.propagation) {
    case PropagationPolicy::kDefault:
      break;
    case PropagationPolicy::kOrphan:
      body["propagationPolicy"] = "Orphan";
      break;
    case PropagationPolicy::kBackground:
      body["propagationPolicy"] = "Background";
      break;
    case PropagationPolicy::kForeground:
      body["propagationPolicy"] = "Foreground";
      break;
  }
  if (options.grace_period_seconds.has_value()) {
    body["gracePeriodSeconds"] = *options.grace_period_seconds;
  }
  return body;
}

absl::StatusOr<std::string> GetLogs(KubeClient& client, const std::string& ns,
                                    const std::string& pod, LogOptions options) {
  options.follow = false;
  std::string out;
  absl::Status s = client.StreamLogs(ns, pod, options, [&out](absl::string_view chunk) {
    out.append(chunk.data(), chunk.size());
    return true;
  });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<std::optional<nlohmann::json>> GetTrainingRuntime(KubeClient& client,
                                                                 const std::string& kind,
                                                                 const std::string& ns,
                                                                 const std::string& name) {
  const ResourceDescriptor resource = resources::TrainingRuntimes(kind);
  absl::StatusOr<nlohmann::json> runtime =
      client.Get(resource, resource.namespaced ? ns : "", name);
  if (absl::IsNotFound(runtime.status())) return std::nullopt;
  if (!runtime.ok()) return runtime.status();
  return *std::move(runtime);
}

absl::Status RetryOnConflict(const std::function<absl::Status()>& fn,
                             const RetryOnConflictOptions& options) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  absl::Duration backoff = options.initial_backoff;
  absl::Status last;
  for (int attempt = 0; attempt < std::max(1, options.max_attempts); ++attempt) {
    if (attempt > 0) {
      std::uniform_real_distribution<double> u(0.0, options.jitter);
      absl::SleepFor(backoff * (1.0 + u(rng)));
      backoff = backoff * options.factor;
    }
    last = fn();
    if (!absl::IsAborted(last)) return last;
  }
  return last;
}

namespace {
std::string MetaString(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) return "";
  auto m = o.find("metadata");
  if (m == o.end() || !m->is_object()) return "";
  auto v = m->find(key);
  if (v == m->end() || !v->is_string()) return "";
  return v->get<std::string>();
}
}  // namespace

std::string NameOf(const nlohmann::json& object) { return MetaString(object, "name"); }
std::string NamespaceOf(const nlohmann::json& object) { return MetaString(object, "namespace"); }
std::string ResourceVersionOf(const nlohmann::json& object) {
  return MetaString(object, "resourceVersion");
}
std::string UidOf(const nlohmann::json& object) { return MetaString(object, "uid"); }

}  // namespace coach::kubeclient
