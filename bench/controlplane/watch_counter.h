#pragma once

// What a timed run waits on: a watch that counts the distinct objects of one resource in one
// namespace, and the clock every figure of a run is read on.
//
// Counter is thread-safe; it watches on a thread of its own until destroyed.

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "operator/backend/kube/client/kube_client.h"

namespace coach::bench::controlplane {

// Seconds on the steady clock. The times a Counter records are on it, so a run's start must be
// read from it too.
double NowS();

// Counts the distinct objects a watch on one namespace has seen (ADDED or MODIFIED; with
// `counts`, only in a state it accepts), and when the count first reached `target`.
class Counter {
 public:
  Counter(kubeclient::KubeClient* client, kubeclient::ResourceDescriptor resource, std::string ns,
          size_t target, std::function<bool(const nlohmann::json&)> counts = nullptr);
  ~Counter();
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  size_t count();
  // When the target, the first object, and half of the target were seen (0: not yet).
  double reached_at();
  double first_at();
  double half_at();

 private:
  void Run();

  kubeclient::KubeClient* client_;
  kubeclient::ResourceDescriptor resource_;
  std::string ns_;
  size_t target_;
  std::function<bool(const nlohmann::json&)> counts_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::set<std::string> names_;
  double reached_at_ = 0;
  double first_at_ = 0;
  double half_at_ = 0;
  std::thread thread_;
};

// True once `pods` and `svcs` have seen their targets; false when NowS() passed `deadline` first.
bool WaitFor(Counter& pods, Counter& svcs, size_t pod_target, size_t svc_target, double deadline);

// A job counts once its status carries a condition (coach's first status write: Created).
bool HasConditions(const nlohmann::json& job);

}  // namespace coach::bench::controlplane
