#pragma once

// Jobs for the SDK's and the CLI's tests.

#include <string>
#include <vector>

#include "api/v1/training_job.pb.h"

namespace coach::sdk::testing {

// A PyTorchJob with the given conditions set True, in order, each with `message` (for status
// tests; it has no replicas, so only a store takes it as it is).
api::v1::TrainingJob JobWithConditions(const std::string& namespace_, const std::string& name,
                                       const std::vector<std::string>& true_conditions,
                                       const std::string& message = "");

}  // namespace coach::sdk::testing
