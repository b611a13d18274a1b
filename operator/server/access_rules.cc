#include "operator/server/access_rules.h"

#include "api/v1/kinds.h"

namespace coach::server {
namespace {

// The API group of a job kind's plural: kubeflow.org, or trainer.kubeflow.org for trainjobs.
std::string GroupOf(std::string_view plural) {
  for (const api::v1::KindInfo& kind : api::v1::AllKinds()) {
    if (kind.plural == plural) return std::string(kind.group);
  }
  return std::string(api::v1::kGroup);
}

ResourceAttributes Job(const char* verb, std::string_view plural, const std::string& ns,
                       const std::string& name) {
  return {verb, GroupOf(plural), std::string(plural), "", ns, name};
}

}  // namespace

std::string_view ApiCallName(ApiCall call) {
  switch (call) {
    case ApiCall::kCreateJob:
      return "CreateJob";
    case ApiCall::kGetJob:
      return "GetJob";
    case ApiCall::kListJobs:
      return "ListJobs";
    case ApiCall::kWatchJobs:
      return "WatchJobs";
    case ApiCall::kDeleteJob:
      return "DeleteJob";
    case ApiCall::kSuspendJob:
      return "SuspendJob";
    case ApiCall::kResumeJob:
      return "ResumeJob";
    case ApiCall::kGetJobLogs:
      return "GetJobLogs";
    case ApiCall::kDescribeJob:
      return "DescribeJob";
    case ApiCall::kListJobHistories:
      return "ListJobHistories";
  }
  return "?";
}

std::vector<ResourceAttributes> RequiredAccess(ApiCall call, std::string_view plural,
                                               const std::string& ns, const std::string& name) {
  switch (call) {
    case ApiCall::kCreateJob:
      return {Job("create", plural, ns, name)};
    case ApiCall::kGetJob:
      return {Job("get", plural, ns, name)};
    case ApiCall::kListJobs:
      return {Job("list", plural, ns, "")};
    case ApiCall::kWatchJobs:
      return {Job("watch", plural, ns, name)};
    case ApiCall::kDeleteJob:
      return {Job("delete", plural, ns, name)};
    case ApiCall::kSuspendJob:
    case ApiCall::kResumeJob:
      return {Job("patch", plural, ns, name)};
    case ApiCall::kGetJobLogs:
      return {Job("get", plural, ns, name), {"get", "", "pods", "log", ns, ""}};
    case ApiCall::kDescribeJob:
      return {Job("get", plural, ns, name), {"list", "", "events", "", ns, ""}};
    case ApiCall::kListJobHistories:
      // A deleted job's record is what listing the job showed; its logs, what reading them did.
      return {Job("list", plural, ns, ""), {"get", "", "pods", "log", ns, ""}};
  }
  return {};
}

}  // namespace coach::server
