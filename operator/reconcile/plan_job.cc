#include "operator/reconcile/plan_job.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1/job_conditions.h"
#include "api/v1/job_policies.h"
#include "common/status_macros.h"
#include "operator/model/listen_ports.h"
#include "operator/model/pod_identity.h"
#include "operator/model/replicas.h"
#include "operator/reconcile/conditions.h"
#include "operator/reconcile/desired_objects.h"
#include "operator/reconcile/gang.h"
#include "operator/reconcile/mpi_objects.h"
#include "operator/reconcile/train_job_plan.h"

namespace coach::reconcile {
namespace {

using model::JobPlan;
using model::KubeObject;

std::string CleanPodPolicyOf(const model::Job& job) {
  const auto& rp = job.spec().run_policy();
  if (rp.has_clean_pod_policy()) return rp.clean_pod_policy();
  if (job.spec().has_mpi_clean_pod_policy()) return job.spec().mpi_clean_pod_policy();
  return api::v1::kCleanPodPolicyNone;
}

// The plan of a job as it is stored: its replica specs as written.
JobPlan StoredJobPlan(const model::Job& job, const api::v1::KindInfo& kind) {
  JobPlan plan;
  plan.job = &job;
  plan.kind = &kind;
  plan.clean_pod_policy = CleanPodPolicyOf(job);
  plan.replica_types = ReplicaTypes(job);
  return plan;
}

// A kubeflow.org/v1 job: its pods and per-pod Services from the kind's builders; the MPI
// objects (the hostfile lists the Workers running now) and the PodGroup shared.
JobPlan TrainingOperatorPlan(const model::Job& job, const api::v1::KindInfo& kind,
                             const model::ObservedState& observed,
                             const model::ReconcileConfig& config) {
  JobPlan plan = StoredJobPlan(job, kind);
  const bool mpi = job.kind() == api::v1::MPI_JOB;
  if (mpi) {
    std::vector<int> running_workers;
    for (const model::ObservedPod& p : observed.pods) {
      if (p.replica_type == api::v1::kReplicaWorker && p.phase == model::PodPhase::kRunning) {
        running_workers.push_back(p.index);
      }
    }
    // An MPIJob that cannot have them cannot have its pods either: DesiredPod says why.
    absl::StatusOr<std::vector<KubeObject>> aux = MpiAuxObjects(job, config, running_workers);
    if (aux.ok()) plan.objects = std::move(*aux);
  }
  if (std::optional<KubeObject> pg = DesiredPodGroup(job, config)) {
    plan.objects.push_back(std::move(*pg));
  }
  const model::Job* stored = &job;
  const model::ReconcileConfig* settings = &config;
  plan.pod = [stored, settings](const std::string& type, int index) {
    return DesiredPod(*stored, type, index, *settings);
  };
  plan.service_per_pod = !mpi;
  if (plan.service_per_pod) {
    plan.service = [stored](const std::string& type, int index) {
      return DesiredService(*stored, type, index);
    };
  }
  return plan;
}

// A TrainJob that is not (or cannot be) expanded: what a finished, refused or waiting one
// needs, in JobSet's words.
JobPlan UnexpandedTrainJobPlan(const model::Job& job, const api::v1::KindInfo& kind) {
  JobPlan plan = StoredJobPlan(job, kind);
  plan.words = model::StatusWords::kJobSet;
  plan.leading_type = model::kTrainerReplicatedJob;
  return plan;
}

JobPlan TrainJobPlan(const model::Job& job, const api::v1::KindInfo& kind,
                     const model::ObservedState& observed, const model::ReconcileConfig& config) {
  int attempt = job.status().coach().attempt();
  for (const model::ObservedPod& pod : observed.pods) attempt = std::max(attempt, pod.attempt);
  absl::StatusOr<JobPlan> plan = PlanTrainJob(job, observed, attempt, config);
  // Admission once, on the pass that first sees the job with its runtime (before it is created).
  if (plan.ok() && !HasTrueCondition(job.status(), api::v1::kJobCreated)) {
    if (absl::Status admitted = AdmitTrainJob(job, observed); !admitted.ok()) plan = admitted;
  }
  if (plan.ok()) {
    // What coach adds to every replica, on the pods upstream's controllers would make.
    const model::Job* expanded = plan->job;
    const model::ReconcileConfig* settings = &config;
    plan->pod = [expanded, settings, upstream = std::move(plan->pod)](
                    const std::string& type, int index) -> absl::StatusOr<KubeObject> {
      ASSIGN_OR_RETURN(KubeObject pod, upstream(type, index));
      RETURN_IF_ERROR(DecoratePlannedPod(*expanded, type, index, *settings, pod));
      return pod;
    };
    return *std::move(plan);
  }
  JobPlan unexpanded = UnexpandedTrainJobPlan(job, kind);
  if (absl::IsFailedPrecondition(plan.status())) {
    // Upstream: an event and a retry, no condition (the runtime may yet be created).
    unexpanded.wait = JobPlan::Wait{
        "TrainJobResourcesCreationFailed",
        absl::StrCat("TrainJob resources reconciliation failed: ", plan.status().message()),
        std::string(plan.status().message())};
  } else {
    unexpanded.refused = std::string(plan.status().message());
  }
  return unexpanded;
}

// Coach's identity labels on every pod of every kind, whichever builder made it.
JobPlan WithPodIdentity(JobPlan plan) {
  if (!plan.pod) return plan;
  plan.pod = [job = plan.job, build = std::move(plan.pod)](
                 const std::string& type, int index) -> absl::StatusOr<KubeObject> {
    ASSIGN_OR_RETURN(KubeObject pod, build(type, index));
    model::StampPodIdentity(*job, type, index, pod.body);
    return pod;
  };
  return plan;
}

}  // namespace

absl::StatusOr<JobPlan> PlanJob(const model::Job& job, const model::ObservedState& observed,
                                const model::ReconcileConfig& config) {
  ASSIGN_OR_RETURN(const api::v1::KindInfo* kind, KindOf(job));
  if (job.kind() != api::v1::TRAIN_JOB) {
    return WithPodIdentity(TrainingOperatorPlan(job, *kind, observed, config));
  }
  if (IsFinished(job.status())) return UnexpandedTrainJobPlan(job, *kind);
  return WithPodIdentity(TrainJobPlan(job, *kind, observed, config));
}

absl::StatusOr<std::vector<KubeObject>> PlannedObjects(const JobPlan& plan) {
  if (plan.wait) return absl::FailedPreconditionError(plan.wait->cause);
  if (!plan.refused.empty()) return absl::InvalidArgumentError(plan.refused);
  std::vector<KubeObject> objects = plan.objects;
  for (const std::string& type : plan.replica_types) {
    for (int index = 0; index < Replicas(*plan.job, type); ++index) {
      ASSIGN_OR_RETURN(KubeObject pod, plan.pod(type, index));
      objects.push_back(std::move(pod));
      if (!plan.service_per_pod) continue;
      ASSIGN_OR_RETURN(KubeObject service, plan.service(type, index));
      objects.push_back(std::move(service));
    }
  }
  return objects;
}

absl::StatusOr<std::vector<KubeObject>> DesiredObjects(const model::Job& job,
                                                       const model::ReconcileConfig& config) {
  ASSIGN_OR_RETURN(JobPlan plan, PlanJob(job, model::ObservedState(), config));
  return PlannedObjects(plan);
}

std::string ManagingController(const model::Job& job, const model::ReconcileConfig& config) {
  return job.kind() == api::v1::TRAIN_JOB ? api::v1::kTrainJobController : config.controller_name;
}

}  // namespace coach::reconcile
