#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "operator/model/replicas.h"
#include "operator/reconcile/framework_env.h"

namespace coach::reconcile {

constexpr char kXGBoostPortName[] = "xgboostjob-port";

absl::Status SetXGBoostEnv(const ReplicaRef& r, model::Json& pod_template) {
  const model::Job& job = r.job;
  ASSIGN_OR_RETURN(int master_declared, DeclaredPort(job, "Master", kXGBoostPortName));
  const int master_port = r.plan.Port(job, "Master", 0, kXGBoostPortName, master_declared);
  const int total = TotalReplicas(job);
  // Upstream adds 1 to a worker's rank once per container (a bug with sidecars); every
  // container here gets the same rank: index + number of masters.
  const int rank = r.type == "Worker" ? r.index + Replicas(job, "Master") : r.index;
  int worker_port = 0;
  std::vector<std::string> worker_addrs;
  if (total > 1) {
    ASSIGN_OR_RETURN(int declared, DeclaredPort(job, "Worker", kXGBoostPortName));
    // One WORKER_PORT for all workers, as upstream's shape has it: worker 0's.
    worker_port = r.plan.Port(job, "Worker", 0, kXGBoostPortName, declared);
    for (int i = 0; i < total - 1; ++i) worker_addrs.push_back(r.plan.Host(job, "Worker", i));
  }
  model::Json* containers = MutableContainers(pod_template);
  if (containers == nullptr) return absl::OkStatus();
  for (model::Json& c : *containers) {
    AppendEnv(c, "MASTER_PORT", std::to_string(master_port));
    AppendEnv(c, "MASTER_ADDR", r.plan.Host(job, "Master", 0));
    AppendEnv(c, "WORLD_SIZE", std::to_string(total));
    AppendEnv(c, "RANK", std::to_string(rank));
    AppendEnv(c, "PYTHONUNBUFFERED", "1");
    if (total > 1) {
      AppendEnv(c, "WORKER_PORT", std::to_string(worker_port));
      AppendEnv(c, "WORKER_ADDRS", absl::StrJoin(worker_addrs, ","));
    }
  }
  return absl::OkStatus();
}

}  // namespace coach::reconcile
