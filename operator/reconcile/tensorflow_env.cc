#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "operator/model/replicas.h"
#include "operator/reconcile/framework_env.h"

namespace coach::reconcile {
namespace {

constexpr char kPortName[] = "tfjob-port";
constexpr int kDefaultPort = 2222;
using OrderedJson = nlohmann::ordered_json;

// Lowercase type -> addresses. A std::map, so types come out sorted as Go's
// encoding/json sorts map keys; the evaluator is not part of the training cluster.
std::map<std::string, std::vector<std::string>> ClusterSpec(const ReplicaRef& r) {
  std::map<std::string, std::vector<std::string>> cluster;
  for (const std::string& type : ReplicaTypes(r.job)) {
    if (type == "Evaluator") continue;
    absl::StatusOr<int> declared = DeclaredPort(r.job, type, kPortName);
    const int port = declared.ok() ? *declared : kDefaultPort;
    std::vector<std::string>& addrs = cluster[Lower(type)];
    for (int i = 0; i < Replicas(r.job, type); ++i) {
      addrs.push_back(absl::StrCat(r.plan.QualifiedHost(r.job, type, i), ":",
                                   r.plan.Port(r.job, type, i, kPortName, port)));
    }
  }
  return cluster;
}

}  // namespace

absl::StatusOr<std::string> TFConfigJson(const ReplicaRef& r) {
  const auto cluster = ClusterSpec(r);
  const std::string type = Lower(r.type);
  OrderedJson task = {{"type", type}, {"index", r.index}};
  OrderedJson config;
  if (r.job.spec().has_enable_dynamic_worker() && r.job.spec().enable_dynamic_worker()) {
    // Upstream's SparseTFConfig: {"sparseCluster":{"worker":{...},"ps":[...]},"task":...}
    OrderedJson worker = OrderedJson::object();
    OrderedJson ps = OrderedJson::array();
    auto find = [&](const std::string& t) -> const std::vector<std::string>* {
      auto it = cluster.find(t);
      return it == cluster.end() ? nullptr : &it->second;
    };
    const std::vector<std::string>* own = find(type);
    if (type == "ps") {
      if (own != nullptr && r.index < static_cast<int>(own->size())) ps.push_back((*own)[r.index]);
    } else if (type == "worker") {
      if (const auto* all_ps = find("ps")) ps = *all_ps;
      if (own != nullptr && r.index < static_cast<int>(own->size())) {
        worker[std::to_string(r.index)] = (*own)[r.index];
      }
    }
    config["sparseCluster"] = {{"worker", worker}, {"ps", ps}};
    config["task"] = task;
  } else {
    OrderedJson c = OrderedJson::object();
    for (const auto& [t, addrs] : cluster) c[t] = addrs;
    config["cluster"] = c;
    config["task"] = task;
    config["environment"] = "cloud";
  }
  return config.dump();
}

absl::Status SetTensorFlowEnv(const ReplicaRef& replica, model::Json& pod_template) {
  // Upstream wires TF_CONFIG only for distributed jobs (more than one replica in all).
  if (TotalReplicas(replica.job) == 1) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::string tf_config, TFConfigJson(replica));
  model::Json* containers = MutableContainers(pod_template);
  if (containers == nullptr) return absl::OkStatus();
  for (model::Json& c : *containers) {
    if (c.value("name", "") != "tensorflow") continue;
    AppendEnv(c, "TF_CONFIG", tf_config);
  }
  return absl::OkStatus();
}

}  // namespace coach::reconcile
