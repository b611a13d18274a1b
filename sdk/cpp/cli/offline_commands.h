#pragma once

// `coach validate` and `coach render`: the user's dry run, with no daemon involved.
// Both return the process exit code (see exit_codes.h) and write only to the given streams.

#include <ostream>
#include <string>

#include "integrations/karpenter/config.h"

namespace coach::cli {

struct OfflineOptions {
  std::string file;             // "-" for stdin
  std::string output = "yaml";  // "yaml" or "json"
  std::string namespace_;       // -n: for jobs that name none ("default" when empty); a job
                                // naming another one is an error, as with kubectl
  // render: where a TrainJob's runtime is found when the input holds none of that name (the
  // operator's --training-runtimes: YAML files, read recursively); "" : the input only.
  std::string training_runtimes;
  // render: the operator's --gang-scheduler ("none", "volcano", "scheduler-plugins"); "" : none.
  std::string gang_scheduler;
};

// Prints the normalized, defaulted job(s); on bad input every error, and exit 1.
int RunValidate(const OfflineOptions& options, std::ostream& out, std::ostream& err);

// Prints the Kubernetes objects the job(s) would create on a cluster, exactly as they
// would be sent to the API server: JSON as one `v1 List`, YAML one document per object.
// A TrainJob is merged with its runtime, which the input holds (a TrainingRuntime or
// ClusterTrainingRuntime document beside it, as upstream's examples have them) or
// options.training_runtimes does; no runtime, or one upstream's webhook would refuse the job
// against, is exit 1 naming the field. Every pod of every replicated job is printed, initializers
// and trainer alike (on a cluster the trainer's wait for their dependencies).
int RunRender(const OfflineOptions& options, std::ostream& out, std::ostream& err);
// The same with the operator's Karpenter placement (`coach render --karpenter ...`, the
// operator's flags of the same names), so that a user sees where each replica will go.
// A bad flag value is exit 2.
int RunRender(const OfflineOptions& options, const karpenter::ConfigFlags& karpenter,
              std::ostream& out, std::ostream& err);

}  // namespace coach::cli
