#include "operator/reconcile/train_job_elastic.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "operator/model/replicas.h"

namespace coach::reconcile {
namespace {

// The value of env entry `name` in `container`, "" when absent; the entry is removed.
std::string TakeEnv(model::Json& container, const std::string& name) {
  std::string value;
  model::Json kept = model::Json::array();
  for (model::Json& e : container["env"]) {
    if (e.value("name", "") == name) {
      value = e.value("value", "");
    } else {
      kept.push_back(std::move(e));
    }
  }
  container["env"] = std::move(kept);
  return value;
}

void AppendUnlessSet(model::Json& container, const std::string& name, const std::string& value) {
  if (!HasEnv(container, name)) AppendEnv(container, name, value);
}

}  // namespace

void SetElasticNodeEnv(const model::Job& job, const ElasticRange& range, int index,
                       bool shared_host, model::Json& pod_template) {
  model::Json* containers = MutableContainers(pod_template);
  if (containers == nullptr) return;
  const std::string& uid = job.metadata().uid();
  for (model::Json& c : *containers) {
    if (!HasEnv(c, "PET_NNODES")) continue;
    TakeEnv(c, "PET_NNODES");
    AppendEnv(c, "PET_NNODES", absl::StrCat(range.min, ":", range.max));
    const std::string addr = TakeEnv(c, "PET_MASTER_ADDR");
    const std::string port = TakeEnv(c, "PET_MASTER_PORT");
    AppendUnlessSet(c, "PET_RDZV_BACKEND", "c10d");
    // torchtune's command names its endpoint itself (--rdzv_endpoint) and has no master env.
    if (!addr.empty()) AppendEnv(c, "PET_RDZV_ENDPOINT", absl::StrCat(addr, ":", port));
    AppendUnlessSet(c, "PET_RDZV_ID", uid.empty() ? job.metadata().name() : uid);
    AppendUnlessSet(c, "PET_MAX_RESTARTS", absl::StrCat(kElasticNodeMaxRestarts));
    // As for an elastic PyTorchJob's Workers (pytorch_env.cc): without it, after a membership
    // change the ranks of a node that was not rank 0 at first dial a store that is gone.
    AppendUnlessSet(c, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1");
    // Where every pod is one host, each agent would take the endpoint for its own and the first
    // to bind it would hold the store, so losing that pod would end every rendezvous: node 0
    // holds it, as on Kubernetes, where only its name matches the endpoint.
    // The heartbeat as for elastic PyTorchJobs (framework_env.h).
    AppendUnlessSet(c, "PET_RDZV_CONF",
                    shared_host ? absl::StrCat(kElasticKeepAliveConf,
                                               index == 0 ? ",is_host=true" : ",is_host=false")
                                : kElasticKeepAliveConf);
  }
}

}  // namespace coach::reconcile
