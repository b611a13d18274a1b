#pragma once

// Where manifest fields land in the job model, for the decoder and the encoder alike: spec
// fields that only some kinds have (the decoder refuses them on another kind, naming the kinds
// that do have them), and the metadata fields ObjectMeta models.

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "api/v1/training_job.pb.h"

namespace coach::api::v1::codec {

// (field, kinds that have it), e.g. {"slotsPerWorker", {MPI_JOB}}.
const std::vector<std::pair<std::string, std::vector<JobKind>>>& KindSpecificFields();

// True when `field` is one of KindSpecificFields() and `kind` has it.
bool KindHasField(JobKind kind, const std::string& field);

// The metadata fields ObjectMeta has fields of its own for ("name", "labels", ...); every other
// one travels in ObjectMeta.extra_json.
const std::set<std::string>& ModelledMetadataFields();

}  // namespace coach::api::v1::codec
