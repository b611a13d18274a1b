#pragma once

// Spec fields that only some kinds have. The decoder refuses them on another kind (naming
// the kinds that do have them); the encoder writes them only for their own kinds.

#include <string>
#include <utility>
#include <vector>

#include "api/v1/training_job.pb.h"

namespace coach::api::v1::codec {

// (field, kinds that have it), e.g. {"slotsPerWorker", {MPI_JOB}}.
const std::vector<std::pair<std::string, std::vector<JobKind>>>& KindSpecificFields();

// True when `field` is one of KindSpecificFields() and `kind` has it.
bool KindHasField(JobKind kind, const std::string& field);

}  // namespace coach::api::v1::codec
