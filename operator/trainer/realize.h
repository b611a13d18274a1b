#pragma once

// What upstream's JobSet and Job controllers make of a merged TrainJob (MergeRuntime): the
// pods of every replicated job, the headless Service, and for MPI the hostfile ConfigMap.
// Behaviour: shared/reference/kubeflow-v2.md section 4. Values only a cluster knows (UIDs,
// the JobSet's restart count) come in as ClusterFacts.
//
// Deliberate difference: pods are named `<trainjob>-<rjob>-0-<index>-<suffix>` with a
// deterministic suffix (names.h), where upstream's Job controller picks a random one.

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "operator/trainer/merge_runtime.h"

namespace coach::trainer {

struct ClusterFacts {
  std::string job_set_uid;  // labels and annotations jobset.sigs.k8s.io/jobset-uid
  // Replicated job name -> the uid of its Job (labels controller-uid, pod owner references);
  // a job absent here gets "".
  std::map<std::string, std::string> job_uids;
  int restarts = 0;  // jobset.sigs.k8s.io/restart-attempt (the JobSet's status.restarts)
};

struct RealizedJob {
  std::string name;           // the replicated job's
  std::string job_name;       // `<trainjob>-<rjob>-0`
  std::string ancestor_step;  // trainjob-ancestor-step label of the Job template, "" if none
  int pod_count = 0;          // parallelism = completions
  nlohmann::json depends_on;  // the replicated job's dependsOn, [] when none
  // Complete v1 Pod objects, one per completion index, in index order.
  std::vector<nlohmann::json> pods;
};

struct RealizedTrainJob {
  std::vector<RealizedJob> jobs;  // the runtime's replicated job order
  nlohmann::json service;         // the headless v1 Service named after the subdomain
  // MPI runtimes: the v1 ConfigMap `<trainjob>-mpi-hostfile` (key `hostfile`); else null.
  nlohmann::json mpi_hostfile;
};

// `train_job` as given to MergeRuntime, `merged` its result.
// Errors: InvalidArgument naming the field for a replicated job with replicas other than 1
// (coach runs one Job per replicated job, as every shipped runtime does) or a malformed merged
// JobSet (network, volumeClaimPolicies).
absl::StatusOr<RealizedTrainJob> RealizeTrainJob(const nlohmann::json& train_job,
                                                 const MergedTrainJob& merged,
                                                 const ClusterFacts& facts);

}  // namespace coach::trainer
