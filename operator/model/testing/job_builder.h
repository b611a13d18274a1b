#pragma once

// Fluent builders of already-defaulted jobs for the reconciler's, backends' and trackers' tests:
//   MakePyTorchJob("ns", "name").Master(1).Workers(2).RestartPolicy("ExitCode").Build()
// Every replica gets the kind's default container (image "busybox", default port) and
// an explicit restartPolicy (the kind's default unless set), as defaulting would.

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "api/v1/kinds.h"
#include "operator/model/reconcile_types.h"

namespace coach::reconcile::testing {

class JobBuilder {
 public:
  JobBuilder(api::v1::JobKind kind, std::string ns, std::string name);

  JobBuilder& Replicas(const std::string& type, int n);
  JobBuilder& Master(int n) { return Replicas("Master", n); }
  JobBuilder& Workers(int n) { return Replicas("Worker", n); }
  JobBuilder& PS(int n) { return Replicas("PS", n); }
  JobBuilder& Chief(int n) { return Replicas("Chief", n); }
  JobBuilder& Evaluator(int n) { return Replicas("Evaluator", n); }
  JobBuilder& Launcher(int n) { return Replicas("Launcher", n); }

  // For every replica type added so far and later.
  JobBuilder& RestartPolicy(const std::string& policy);
  JobBuilder& RestartPolicy(const std::string& type, const std::string& policy);
  // Replaces the pod template of `type` (JSON object text).
  JobBuilder& Template(const std::string& type, const std::string& template_json);

  JobBuilder& Uid(const std::string& uid);
  JobBuilder& Annotation(const std::string& key, const std::string& value);
  JobBuilder& BackoffLimit(int n);
  JobBuilder& ActiveDeadlineSeconds(int64_t s);
  JobBuilder& TtlSecondsAfterFinished(int s);
  JobBuilder& CleanPodPolicy(const std::string& p);
  JobBuilder& Suspend(bool s);
  JobBuilder& ManagedBy(const std::string& m);
  JobBuilder& MinAvailable(int n);
  JobBuilder& Queue(const std::string& q);
  JobBuilder& PriorityClass(const std::string& p);
  JobBuilder& MinResource(const std::string& name, const std::string& quantity);
  JobBuilder& ScheduleTimeoutSeconds(int s);
  JobBuilder& NprocPerNode(const std::string& n);
  JobBuilder& Elastic(std::optional<int> min, std::optional<int> max);
  JobBuilder& RdzvId(const std::string& id);
  JobBuilder& SlotsPerWorker(int n);
  JobBuilder& EnableDynamicWorker(bool b);
  JobBuilder& SuccessPolicy(const std::string& p);

  // Status, for jobs already seen by an earlier reconcile.
  JobBuilder& StartTime(absl::Time t);
  JobBuilder& CompletionTime(absl::Time t);
  JobBuilder& Condition(const std::string& type, const std::string& status,
                        absl::Time at = absl::UnixEpoch());

  model::Job Build() const { return job_; }

 private:
  model::Job job_;
  std::optional<std::string> restart_policy_;
};

JobBuilder MakePyTorchJob(const std::string& ns, const std::string& name);
JobBuilder MakeTFJob(const std::string& ns, const std::string& name);
JobBuilder MakeXGBoostJob(const std::string& ns, const std::string& name);
JobBuilder MakeMPIJob(const std::string& ns, const std::string& name);
JobBuilder MakePaddleJob(const std::string& ns, const std::string& name);
JobBuilder MakeJAXJob(const std::string& ns, const std::string& name);

// The seed job of the docs: PyTorchJob default/pytorch-mnist, 1 Master + 2 Workers.
model::Job SeedPyTorchJob();

}  // namespace coach::reconcile::testing
