#pragma once

// Small TrainingJob builders for the job stores' tests.

#include <string>

#include "api/v1/training_job.pb.h"

namespace coach::store::testing {

// A PyTorchJob with a 2-replica Worker spec (OnFailure), namespace/name set.
api::v1::TrainingJob MakeJob(const std::string& ns, const std::string& name);

}  // namespace coach::store::testing
