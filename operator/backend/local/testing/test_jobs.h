#pragma once

// Small TrainingJob builders for the local backend's tests.

#include <string>

#include "api/v1/training_job.pb.h"

namespace coach::backend::local::testing {

// A PyTorchJob with a 2-replica Worker spec (OnFailure), namespace/name set.
api::v1::TrainingJob MakeJob(const std::string& ns, const std::string& name);

}  // namespace coach::backend::local::testing
