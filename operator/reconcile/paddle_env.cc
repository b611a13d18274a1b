#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "operator/model/replicas.h"
#include "operator/reconcile/framework_env.h"

namespace coach::reconcile {

constexpr char kPaddlePortName[] = "master";

absl::Status SetPaddleEnv(const ReplicaRef& r, model::Json& pod_template) {
  const model::Job& job = r.job;
  const bool ps_mode = HasReplicaType(job, "Master");
  // PS mode rendezvous at master 0, collective mode at worker 0.
  const std::string root_type = ps_mode ? "Master" : "Worker";
  ASSIGN_OR_RETURN(int declared, DeclaredPort(job, root_type, kPaddlePortName));
  const int port = r.plan.Port(job, root_type, 0, kPaddlePortName, declared);
  const bool is_root = r.type == root_type && r.index == 0;
  const bool use_pod_ip = is_root && r.plan.PodIPAvailable();
  model::Json* containers = MutableContainers(pod_template);
  if (containers == nullptr) return absl::OkStatus();
  for (model::Json& c : *containers) {
    AppendEnv(c, "PYTHONUNBUFFERED", "1");
    AppendEnv(c, "PADDLE_JOB_ID", job.metadata().name());
    AppendEnv(c, "PADDLE_NNODES", std::to_string(TotalReplicas(job)));
    if (use_pod_ip) {
      AppendEnvFieldRef(c, "POD_IP_DUMMY", "status.podIP");
      AppendEnv(c, "PADDLE_MASTER", absl::StrCat("$(POD_IP_DUMMY):", port));
    } else {
      AppendEnv(c, "PADDLE_MASTER", absl::StrCat(r.plan.Host(job, root_type, 0), ":", port));
    }
    if (ps_mode) {
      if (r.type == "Master") {
        AppendEnv(c, "PADDLE_SERVER_NUM", "1");
      } else {
        AppendEnv(c, "PADDLE_TRAINER_NUM", "1");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace coach::reconcile
