#include "operator/cmd/tracker_hooks.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <string>

#include "operator/backend/log_tails.h"
#include "operator/cmd/mlflow_client.h"
#include "operator/reconcile/mlflow_env.h"

namespace coach::cmd {

coach::tracking::MlflowTrackerHooks MakeTrackerHooks(coach::store::JobStore* job_store,
                                                     coach::core::WatchBroadcaster* watchers,
                                                     coach::core::Controller* const* controller,
                                                     coach::backend::Backend* backend,
                                                     const coach::model::MlflowConfig& mlflow) {
  coach::tracking::MlflowTrackerHooks hooks;
  hooks.make_client = [mlflow](const std::string& uri) {
    return MakeMlflowClient(uri, coach::reconcile::IsOperatorsServer(uri, mlflow));
  };
  hooks.annotate = [job_store, watchers, controller](
                       const coach::model::Job& job,
                       const std::map<std::string, std::string>& annotations) -> absl::Status {
    const coach::store::JobKey key = coach::store::KeyOf(job);
    for (int attempt = 0; attempt < 20; ++attempt) {
      absl::StatusOr<coach::model::Job> got = job_store->Get(key);
      if (!got.ok()) return got.status();
      if (got->metadata().uid() != job.metadata().uid()) {
        return absl::NotFoundError("the job was replaced");
      }
      bool changed = false;
      auto* stored = got->mutable_metadata()->mutable_annotations();
      for (const auto& [k, v] : annotations) {
        auto it = stored->find(k);
        if (it == stored->end() || it->second != v) {
          (*stored)[k] = v;
          changed = true;
        }
      }
      if (!changed) return absl::OkStatus();
      absl::StatusOr<coach::model::Job> updated = job_store->Update(*got);
      if (absl::IsAborted(updated.status())) continue;  // the controller wrote meanwhile
      if (!updated.ok()) return updated.status();
      watchers->Publish(coach::core::WatchEventType::kModified, *updated);
      if (*controller != nullptr) (*controller)->Enqueue(key);
      return absl::OkStatus();
    }
    return absl::AbortedError("the job kept changing");
  };
  hooks.wake = [controller](const coach::model::Job& job) {
    if (*controller != nullptr) (*controller)->Enqueue(coach::store::KeyOf(job));
  };
  hooks.event = [job_store](const coach::model::Job& job, const std::string& type,
                            const std::string& reason, const std::string& message,
                            absl::Time time) {
    // On Kubernetes an Event object (kubectl describe), locally the job's event list.
    return job_store->AppendEvents(coach::store::KeyOf(job), {{type, reason, message, time}});
  };
  hooks.read_logs = [backend](const coach::model::Job& job, int64_t max_bytes) {
    return coach::backend::ReadLogTails(*backend, job, coach::backend::LogOptions{}, max_bytes);
  };
  return hooks;
}

}  // namespace coach::cmd
