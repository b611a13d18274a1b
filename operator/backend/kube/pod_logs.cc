#include "operator/backend/kube/pod_logs.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "operator/backend/kube/object_fields.h"

namespace coach::backend::kube {

using nlohmann::json;

absl::Status StreamPodLogs(coach::kubeclient::KubeClient* client, const std::string& ns,
                           const std::string& job_name, const std::string& default_container,
                           const std::vector<json>& pods, const std::string& wanted,
                           const LogOptions& options, const LogSink& sink,
                           const std::atomic<bool>& cancelled) {
  struct Target {
    std::string replica;
    std::string pod;
    std::string container;
  };
  std::vector<Target> targets;
  for (const json& pod : pods) {
    const std::string pod_name = StringField(Field(pod, "metadata"), "name");
    std::string container;
    const json& containers = Field(Field(pod, "spec"), "containers");
    if (containers.is_array() && containers.size() > 1) {
      container = StringField(containers[0], "name");
      for (const json& c : containers) {
        if (StringField(c, "name") == default_container) container = default_container;
      }
    }
    targets.push_back(
        {pod_name.substr(std::min(pod_name.size(), job_name.size() + 1)), pod_name, container});
  }
  if (targets.empty()) {
    if (!wanted.empty()) {
      return absl::NotFoundError(absl::StrCat("job ", ns, "/", job_name, " has no replica \"",
                                              options.replica, "\" (no pod ", wanted, ")"));
    }
    return absl::NotFoundError(absl::StrCat("job ", ns, "/", job_name, " has no pods"));
  }
  absl::Mutex sink_mu;
  std::atomic<bool> sink_stopped{false};
  auto stream = [&](const Target& t) -> absl::Status {
    coach::kubeclient::LogOptions lo;
    lo.container = t.container;
    lo.follow = options.follow;
    if (options.tail_lines > 0) lo.tail_lines = options.tail_lines;
    lo.stop = &cancelled;
    absl::Status s = client->StreamLogs(ns, t.pod, lo, [&](absl::string_view chunk) {
      if (sink_stopped.load()) return false;
      absl::MutexLock lock(&sink_mu);
      if (!sink(t.replica, std::string(chunk))) {
        sink_stopped = true;
        return false;
      }
      return true;
    });
    if (s.ok() || absl::IsCancelled(s)) return absl::OkStatus();
    if (absl::IsNotFound(s)) {
      // The pod is in the cache, so the 404 is the log endpoint's: the apiserver got no log
      // from the node (no kubelet, as on kwok's fake nodes; or the pod just went away).
      return absl::UnavailableError(absl::StrCat("logs of pod ", t.pod,
                                                 " are not available from its node (no kubelet "
                                                 "answered, or the pod is gone): ",
                                                 s.message()));
    }
    return absl::Status(s.code(), absl::StrCat("logs of pod ", t.pod, ": ", s.message()));
  };
  if (!options.follow || targets.size() == 1) {
    for (const Target& t : targets) {
      if (cancelled.load() || sink_stopped.load()) break;
      absl::Status s = stream(t);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  std::vector<absl::Status> statuses(targets.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < targets.size(); ++i) {
    threads.emplace_back([&, i] { statuses[i] = stream(targets[i]); });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : statuses) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace coach::backend::kube
