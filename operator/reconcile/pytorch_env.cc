#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "operator/model/replicas.h"
#include "operator/reconcile/elastic.h"
#include "operator/reconcile/framework_env.h"

namespace coach::reconcile {
namespace {

constexpr char kPortName[] = "pytorchjob-port";
constexpr char kEnvDisableSharedRendezvousStore[] = "TORCH_DISABLE_SHARE_RDZV_TCP_STORE";

// Upstream: non-integer nprocPerNode ("auto", "cpu", "gpu") counts as one process.
int NprocPerNodeInt(const model::Job& job) {
  int n = 1;
  if (job.spec().has_nproc_per_node() && absl::SimpleAtoi(job.spec().nproc_per_node(), &n)) {
    return n;
  }
  return 1;
}

std::string NprocPerNode(const model::Job& job) {
  return job.spec().has_nproc_per_node() ? job.spec().nproc_per_node() : "auto";
}

struct Wiring {
  std::vector<std::pair<std::string, std::string>> env;
};

absl::StatusOr<Wiring> Compute(const ReplicaRef& r) {
  const model::Job& job = r.job;
  Wiring w;
  w.env.emplace_back("PYTHONUNBUFFERED", "1");
  const int total = TotalReplicas(job);
  if (HasReplicaType(job, "Master")) {
    ASSIGN_OR_RETURN(int declared, DeclaredPort(job, "Master", kPortName));
    const std::string port = std::to_string(r.plan.Port(job, "Master", 0, kPortName, declared));
    const std::string addr = r.plan.Host(job, "Master", 0);
    w.env.emplace_back("MASTER_PORT", port);
    w.env.emplace_back("MASTER_ADDR", addr);
    w.env.emplace_back("PET_MASTER_PORT", port);
    w.env.emplace_back("PET_MASTER_ADDR", addr);
    const int rank = r.type == "Worker" ? r.index + 1 : r.index;
    w.env.emplace_back("WORLD_SIZE", std::to_string(total * NprocPerNodeInt(job)));
    w.env.emplace_back("RANK", std::to_string(rank));
    w.env.emplace_back("PET_NPROC_PER_NODE", NprocPerNode(job));
    w.env.emplace_back("PET_NODE_RANK", std::to_string(rank));
  } else if (!job.spec().has_elastic_policy() ||
             !job.spec().elastic_policy().has_n_proc_per_node()) {
    // Upstream gives it to every replica, with or without a Master: Worker-only elastic
    // jobs (its echo and imagenet examples) run torchrun with it. elasticPolicy.nProcPerNode,
    // below, is the one value when given.
    w.env.emplace_back("PET_NPROC_PER_NODE", NprocPerNode(job));
  }
  if (!job.spec().has_elastic_policy()) {
    w.env.emplace_back("PET_NNODES", std::to_string(total));
    return w;
  }
  const api::v1::ElasticPolicy& ep = job.spec().elastic_policy();
  // Rendezvous endpoint: an explicit host is the user's, kept verbatim; the default
  // (worker 0) goes through the plan like every other address.
  std::string host = ep.has_rdzv_host() ? ep.rdzv_host() : r.plan.Host(job, "Worker", 0);
  int port = 0;
  if (ep.has_rdzv_port()) {
    port = ep.has_rdzv_host() ? ep.rdzv_port()
                              : r.plan.Port(job, "Worker", 0, kPortName, ep.rdzv_port());
  } else {
    ASSIGN_OR_RETURN(int declared, DeclaredPort(job, "Worker", kPortName));
    port = r.plan.Port(job, "Worker", 0, kPortName, declared);
  }
  w.env.emplace_back("PET_RDZV_ENDPOINT", absl::StrCat(host, ":", port));
  const std::string backend = ep.has_rdzv_backend() ? ep.rdzv_backend() : "c10d";
  w.env.emplace_back("PET_RDZV_BACKEND", backend);
  std::string nnodes;
  bool resizes = false;  // Workers may come and go: min < max
  if (ep.has_min_replicas() || ep.has_max_replicas()) {
    const int min = ep.has_min_replicas() ? ep.min_replicas() : ep.max_replicas();
    const int max = ep.has_max_replicas() ? ep.max_replicas() : ep.min_replicas();
    nnodes = absl::StrCat(min, ":", max);
    resizes = min < max;
  } else {
    if (!HasReplicaType(job, "Worker")) {
      return absl::InvalidArgumentError("elasticPolicy: cannot find the worker spec");
    }
    nnodes = std::to_string(Replicas(job, "Worker"));
  }
  w.env.emplace_back("PET_NNODES", nnodes);
  if (ep.has_max_restarts())
    w.env.emplace_back("PET_MAX_RESTARTS", std::to_string(ep.max_restarts()));
  if (ep.has_n_proc_per_node()) {
    w.env.emplace_back("PET_NPROC_PER_NODE", std::to_string(ep.n_proc_per_node()));
  }
  if (ep.has_rdzv_id()) w.env.emplace_back("PET_RDZV_ID", ep.rdzv_id());
  std::vector<std::string> conf;
  bool conf_names_host = false;
  bool conf_names_keep_alive = false;
  for (const auto& c : ep.rdzv_conf()) {
    conf.push_back(absl::StrCat(c.key(), "=", c.value()));
    conf_names_host = conf_names_host || c.key() == "is_host";
    conf_names_keep_alive = conf_names_keep_alive || c.key() == "keep_alive_interval";
  }
  // A lost Worker's agent stays a member of the rendezvous until it misses 3 heartbeats, and
  // the others cannot form their next round before: 15 s at torch's 5 s interval, 3 s at 1 s.
  if (backend == "c10d" && resizes && !conf_names_keep_alive) {
    conf.push_back(kElasticKeepAliveConf);
  }
  // Where every replica is one host, each agent would take the rendezvous endpoint for its own
  // and the first to bind it would hold the store: losing that replica, whichever it is, would
  // end the rendezvous of all. Worker 0 holds it, as on Kubernetes, where only its name matches.
  if (backend == "c10d" && !ep.has_rdzv_host() && !conf_names_host && r.plan.SharedHost()) {
    conf.push_back(absl::StrCat("is_host=", r.type == "Worker" && r.index == 0 ? "true" : "false"));
  }
  if (!conf.empty()) w.env.emplace_back("PET_RDZV_CONF", absl::StrJoin(conf, ","));
  if (ep.has_standalone() && ep.standalone()) w.env.emplace_back("PET_STANDALONE", "");
  // torchrun's agents hand their ranks a TCP store that a node which was not rank 0 remembers
  // from its first rendezvous: after a membership change (a lost Worker, one joining) its ranks
  // dial a store that is gone and hang. Each round's own store, unshared, has no such memory.
  w.env.emplace_back(kEnvDisableSharedRendezvousStore, "1");
  return w;
}

}  // namespace

absl::Status SetPyTorchEnv(const ReplicaRef& replica, model::Json& pod_template) {
  ASSIGN_OR_RETURN(Wiring w, Compute(replica));
  model::Json* containers = MutableContainers(pod_template);
  if (containers == nullptr) return absl::OkStatus();
  for (model::Json& c : *containers) {
    for (const auto& [name, value] : w.env) {
      // The container's own choice of store sharing stands.
      if (name == kEnvDisableSharedRendezvousStore && HasEnv(c, name)) continue;
      AppendEnv(c, name, value);
    }
  }
  return absl::OkStatus();
}

}  // namespace coach::reconcile
