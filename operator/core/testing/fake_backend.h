#pragma once

// A Backend for controller and server tests: keeps "pods" and other objects in memory,
// records every call, and lets the test move pods through phases, set exit codes and
// inject errors. Created pods start Pending.
//
// Thread-safe.

#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "operator/backend/backend.h"

namespace coach::core::testing {

class FakeBackend : public backend::Backend {
 public:
  struct AppliedAction {
    std::string job;  // "ns/name"
    model::Action::Type type;
    std::string kind;
    std::string name;
  };

  std::string Name() const override { return "fake"; }
  void SetChangeCallback(backend::ChangeCallback callback) override;
  absl::Status Start() override;
  void Stop() override;
  absl::Status Admit(const model::Job& job) override;
  std::shared_ptr<const model::AddressPlan> AddressPlanFor(const model::Job& job) override;
  absl::StatusOr<model::ObservedState> Observe(const model::Job& job) override;
  absl::Status Apply(const model::Job& job, const model::Action& action) override;
  absl::Status Forget(const model::Job& job) override;
  absl::Status StreamLogs(const model::Job& job, const backend::LogOptions& options,
                          const backend::LogSink& sink,
                          const std::atomic<bool>& cancelled) override;

  // --- Test controls. ---
  // Sets a pod's phase (and exit code). Calls the change callback (as a real backend
  // would) unless `notify` is false.
  void SetPodPhase(const std::string& ns, const std::string& job, const std::string& pod,
                   model::PodPhase phase, std::optional<int> exit_code = std::nullopt,
                   bool notify = true);
  // Puts `pod` among the job's pods (keyed by pod.name) exactly as given: type, index,
  // phase, restarts, exit code, message. Calls the change callback.
  void SetPod(const std::string& ns, const std::string& job, const model::ObservedPod& pod);
  // Every pod of the job.
  void SetAllPods(const std::string& ns, const std::string& job, model::PodPhase phase,
                  std::optional<int> exit_code = std::nullopt);
  // Errors returned by the next calls (until cleared with OkStatus()).
  void SetAdmitError(absl::Status s);
  void SetObserveError(absl::Status s);
  void SetApplyError(absl::Status s);
  // Log text of a pod, served by StreamLogs.
  void SetLog(const std::string& pod, const std::string& text);
  // The runtime (JSON text) every TrainJob's Observe reports; "" (the default): none exists.
  void SetTrainJobRuntime(const std::string& runtime_json);

  std::vector<AppliedAction> applied() const;
  int CreateCount(const std::string& ns, const std::string& job) const;
  std::vector<std::string> PodNames(const std::string& ns, const std::string& job) const;
  std::vector<std::string> forgotten() const;
  std::vector<std::string> admitted() const;
  bool started() const;
  bool stopped() const;

 private:
  struct JobState {
    std::map<std::string, model::ObservedPod> pods;
    std::map<std::string, std::string> objects;  // name -> kind
  };
  static std::string Key(const std::string& ns, const std::string& name) { return ns + "/" + name; }
  void Notify(const std::string& ns, const std::string& name);

  mutable absl::Mutex mu_;
  backend::ChangeCallback callback_;
  std::map<std::string, JobState> jobs_ ABSL_GUARDED_BY(mu_);
  std::vector<AppliedAction> applied_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> forgotten_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> admitted_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> logs_ ABSL_GUARDED_BY(mu_);
  std::string train_job_runtime_ ABSL_GUARDED_BY(mu_);
  absl::Status admit_error_ ABSL_GUARDED_BY(mu_);
  absl::Status observe_error_ ABSL_GUARDED_BY(mu_);
  absl::Status apply_error_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace coach::core::testing
