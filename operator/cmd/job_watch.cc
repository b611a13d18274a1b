#include "operator/cmd/job_watch.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace coach::cmd {
namespace {

core::WatchEventType EventTypeOf(backend::kube::JobChangeType type) {
  switch (type) {
    case backend::kube::JobChangeType::kAdded:
      return core::WatchEventType::kAdded;
    case backend::kube::JobChangeType::kModified:
      return core::WatchEventType::kModified;
    case backend::kube::JobChangeType::kDeleted:
      break;
  }
  return core::WatchEventType::kDeleted;
}

}  // namespace

absl::Status WatchJobChanges(backend::kube::CrJobStore* store, core::Controller* controller,
                             core::WatchBroadcaster* watchers, history::LogKeeper* history) {
  absl::Status watching =
      store->StartWatching([controller, watchers, history](const backend::kube::JobChange& c) {
        // The kind too: a PyTorchJob and a TFJob of one name are two jobs (and the plain name
        // of either would name neither).
        controller->Enqueue(c.key);
        if (!c.job.has_value()) return;
        watchers->Publish(EventTypeOf(c.type), *c.job);
        if (history != nullptr && c.type == backend::kube::JobChangeType::kDeleted) {
          history->JobGone(*c.job);
        }
      });
  if (!watching.ok()) {
    return absl::Status(watching.code(), absl::StrCat("job watch: ", watching.ToString()));
  }
  if (!store->WaitForSync(absl::Seconds(60))) {
    spdlog::warn(
        "job watch: not every kind listed within 60s (are coach's CRDs installed? "
        "kubectl apply -f charts/coach/crds); going on");
  }
  return absl::OkStatus();
}

}  // namespace coach::cmd
