#pragma once

// What each TrainingService call needs from Kubernetes RBAC, as SubjectAccessReview
// attributes: the rights a user would need to do the same with kubectl. Pure.
//
//   CreateJob    create <kind>             (dry runs too, as kubectl --dry-run=server)
//   GetJob       get <kind> NAME
//   ListJobs     list <kind>              (no namespace: list at the cluster scope)
//   WatchJobs    watch <kind> [NAME]      (no namespace: watch at the cluster scope)
//   DeleteJob    delete <kind> NAME
//   SuspendJob   patch <kind> NAME        (runPolicy.suspend is a patch of the job)
//   ResumeJob    patch <kind> NAME
//   GetJobLogs   get <kind> NAME, get pods/log   (the replicas' logs are the pods' logs)
//   DescribeJob  get <kind> NAME, list events    (describe shows the job's events)
//
// <kind> is the job kind's plural in its API group ("pytorchjobs" in kubeflow.org, "trainjobs"
// in trainer.kubeflow.org). Pods' and events' rights are asked for the whole namespace: coach
// reads several pods of the job.

#include <string>
#include <string_view>
#include <vector>

#include "operator/server/api_auth.h"

namespace coach::server {

enum class ApiCall {
  kCreateJob,
  kGetJob,
  kListJobs,
  kWatchJobs,
  kDeleteJob,
  kSuspendJob,
  kResumeJob,
  kGetJobLogs,
  kDescribeJob,
  kListJobHistories,
};

// "CreateJob", for messages.
std::string_view ApiCallName(ApiCall call);

// Every attribute set `call` needs on a job of kind `plural` in `ns` (empty: every
// namespace) named `name` (empty: any). All of them must be allowed.
std::vector<ResourceAttributes> RequiredAccess(ApiCall call, std::string_view plural,
                                               const std::string& ns, const std::string& name);

}  // namespace coach::server
