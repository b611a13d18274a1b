#include "bench/controlplane/watch_counter.h"

#include <unistd.h>

#include <chrono>
#include <utility>

#include "absl/status/status.h"

namespace coach::bench::controlplane {

namespace k8s = coach::kubeclient;

double NowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Counter::Counter(k8s::KubeClient* client, k8s::ResourceDescriptor resource, std::string ns,
                 size_t target, std::function<bool(const nlohmann::json&)> counts)
    : client_(client),
      resource_(std::move(resource)),
      ns_(std::move(ns)),
      target_(target),
      counts_(std::move(counts)) {
  thread_ = std::thread([this] { Run(); });
}

Counter::~Counter() {
  stop_ = true;
  thread_.join();
}

size_t Counter::count() {
  std::lock_guard<std::mutex> l(mu_);
  return names_.size();
}

double Counter::reached_at() {
  std::lock_guard<std::mutex> l(mu_);
  return reached_at_;
}

double Counter::first_at() {
  std::lock_guard<std::mutex> l(mu_);
  return first_at_;
}

double Counter::half_at() {
  std::lock_guard<std::mutex> l(mu_);
  return half_at_;
}

void Counter::Run() {
  while (!stop_) {
    k8s::WatchOptions wo;
    wo.stop = &stop_;
    absl::Status s = client_->Watch(resource_, ns_, wo, [this](const k8s::WatchEvent& e) {
      if ((e.type == k8s::WatchEventType::kAdded || e.type == k8s::WatchEventType::kModified) &&
          (!counts_ || counts_(e.object))) {
        std::lock_guard<std::mutex> l(mu_);
        names_.insert(e.object["metadata"].value("name", ""));
        if (first_at_ == 0) first_at_ = NowS();
        if (half_at_ == 0 && 2 * names_.size() >= target_) half_at_ = NowS();
        if (reached_at_ == 0 && names_.size() >= target_) reached_at_ = NowS();
      }
      return !stop_.load();
    });
    if (!stop_ && !s.ok()) usleep(200 * 1000);
  }
}

bool WaitFor(Counter& pods, Counter& svcs, size_t pod_target, size_t svc_target, double deadline) {
  while (NowS() < deadline) {
    if (pods.count() >= pod_target && svcs.count() >= svc_target) return true;
    usleep(20 * 1000);
  }
  return false;
}

bool HasConditions(const nlohmann::json& job) {
  return job.contains("status") && job["status"].is_object() &&
         job["status"].contains("conditions") && job["status"]["conditions"].is_array() &&
         !job["status"]["conditions"].empty();
}

}  // namespace coach::bench::controlplane
