#include <string>

#include "common/status_macros.h"
#include "operator/model/replicas.h"
#include "operator/reconcile/framework_env.h"

namespace coach::reconcile {

constexpr char kJaxPortName[] = "jaxjob-port";

absl::Status SetJaxEnv(const ReplicaRef& r, model::Json& pod_template) {
  const model::Job& job = r.job;
  ASSIGN_OR_RETURN(int declared, DeclaredPort(job, "Worker", kJaxPortName));
  const int port = r.plan.Port(job, "Worker", 0, kJaxPortName, declared);
  model::Json* containers = MutableContainers(pod_template);
  if (containers == nullptr) return absl::OkStatus();
  for (model::Json& c : *containers) {
    AppendEnv(c, "PYTHONUNBUFFERED", "1");
    AppendEnv(c, "COORDINATOR_PORT", std::to_string(port));
    AppendEnv(c, "COORDINATOR_ADDRESS", r.plan.Host(job, "Worker", 0));
    AppendEnv(c, "NUM_PROCESSES", std::to_string(TotalReplicas(job)));
    AppendEnv(c, "PROCESS_ID", std::to_string(r.index));
  }
  return absl::OkStatus();
}

}  // namespace coach::reconcile
