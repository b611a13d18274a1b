#pragma once

// A list+watch loop in the shape of client-go's Reflector: list (paged), hand the full
// state to on_replace, then watch from the list's resourceVersion and hand every change to
// on_event. Bookmarks only advance the resourceVersion. When the watch ends cleanly it
// reconnects at once from the last resourceVersion; on Gone (410) it re-lists; on other
// errors it waits (exponential backoff with jitter, reset by a successful list or watch
// event) and watches again (re-listing when that is Gone). Stop() ends Run() promptly.
//
// Handlers run on the Run() thread, one at a time, in order.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "operator/backend/kube/client/kube_client.h"

namespace coach::kubeclient {

struct ReflectorOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  // Server-side watch timeout; the watch then reconnects (spreads load as upstream's 5-10 min).
  int64_t watch_timeout_seconds = 300;
  absl::Duration initial_backoff = absl::Milliseconds(800);
  absl::Duration max_backoff = absl::Seconds(30);
};

struct ReflectorHandlers {
  // The whole current state after a (re-)list; replaces whatever the caller held.
  std::function<void(const std::vector<nlohmann::json>& items, const std::string& resource_version)>
      on_replace;
  // ADDED, MODIFIED, DELETED (never BOOKMARK or ERROR).
  std::function<void(const WatchEvent& event)> on_event;
  // Every failed list or watch (for logs and metrics); optional.
  std::function<void(const absl::Status& status)> on_error;
  // Optional: applied to every listed item as its page arrives, before on_replace (as
  // client-go's SetTransform), so that the list of a cluster-sized resource (Nodes) is held
  // whole only in the form the caller keeps. Watch events, one object each, come as they are.
  std::function<nlohmann::json(nlohmann::json object)> transform;
};

class Reflector {
 public:
  Reflector(KubeClient* client, ResourceDescriptor resource, std::string ns,
            ReflectorOptions options, ReflectorHandlers handlers);

  // Blocks until Stop(). Call once.
  void Run();
  // Thread-safe; idempotent.
  void Stop();

  std::string last_resource_version() const;
  int64_t list_count() const { return lists_.load(); }
  int64_t watch_count() const { return watches_.load(); }

 private:
  // Fresh paged lists tried after a continue token expired, before one unpaged list.
  static constexpr int kMaxPagedRestarts = 3;

  absl::Status ListAll();
  void Sleep(absl::Duration d);

  KubeClient* const client_;
  const ResourceDescriptor resource_;
  const std::string ns_;
  const ReflectorOptions options_;
  const ReflectorHandlers handlers_;
  std::atomic<bool> stop_{false};
  absl::Notification stopped_;
  mutable absl::Mutex mu_;
  std::string resource_version_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> lists_{0};
  std::atomic<int64_t> watches_{0};
};

}  // namespace coach::kubeclient
