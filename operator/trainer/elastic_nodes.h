#pragma once

// coach.dev/elastic-min-nodes (api/v1/recovery_annotations.h): coach's opt-in to elastic
// training for a TrainJob, which upstream's API has none of. Read in one place so that admission
// (the webhook, `coach submit`) and the plan (operator/reconcile/train_job_plan.h) agree on what
// is valid. The annotation is coach's only: the TrainJob's spec is untouched by it.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace coach::trainer {

// The trainer's node pods train on while at least `min` of its `max` run.
struct ElasticNodes {
  int64_t min = 0;
  int64_t max = 0;
};

// What the annotation is checked against, from the runtime merged with the TrainJob.
struct ElasticFacts {
  bool torch = false;       // the runtime's mlPolicy has torch (torchrun's rendezvous)
  std::string trainer_job;  // the replicated job labelled as the trainer
  int64_t num_nodes = 1;    // its pod count: spec.trainer.numNodes, else mlPolicy.numNodes
};

// The TrainJob's elastic range: nullopt without the annotation. InvalidArgument, as
// "metadata.annotations[coach.dev/elastic-min-nodes]: Invalid value: ...: <why>", when the value
// is not an integer N with 1 <= N < numNodes, the runtime has no torch policy, or its trainer
// job is not `node` (the job torch's rules address).
absl::StatusOr<std::optional<ElasticNodes>> ReadElasticNodes(const nlohmann::json& train_job,
                                                             const ElasticFacts& facts);

}  // namespace coach::trainer
