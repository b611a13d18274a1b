#include "operator/reconcile/framework_env.h"

namespace coach::reconcile {

absl::Status SetClusterSpec(const ReplicaRef& replica, model::Json& pod_template) {
  switch (replica.job.kind()) {
    case api::v1::PYTORCH_JOB:
      return SetPyTorchEnv(replica, pod_template);
    case api::v1::TF_JOB:
      return SetTensorFlowEnv(replica, pod_template);
    case api::v1::XGBOOST_JOB:
      return SetXGBoostEnv(replica, pod_template);
    case api::v1::PADDLE_JOB:
      return SetPaddleEnv(replica, pod_template);
    case api::v1::JAX_JOB:
      return SetJaxEnv(replica, pod_template);
    case api::v1::MPI_JOB:
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError("job kind is not set");
  }
}

}  // namespace coach::reconcile
