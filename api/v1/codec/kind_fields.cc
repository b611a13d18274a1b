#include "api/v1/codec/kind_fields.h"

namespace coach::api::v1::codec {

const std::vector<std::pair<std::string, std::vector<JobKind>>>& KindSpecificFields() {
  static const auto* fields = new std::vector<std::pair<std::string, std::vector<JobKind>>>{
      {"elasticPolicy", {PYTORCH_JOB, PADDLE_JOB}},
      {"nprocPerNode", {PYTORCH_JOB}},
      {"successPolicy", {TF_JOB}},
      {"enableDynamicWorker", {TF_JOB}},
      {"slotsPerWorker", {MPI_JOB}},
      {"cleanPodPolicy", {MPI_JOB}},
      {"mainContainer", {MPI_JOB}},
  };
  return *fields;
}

bool KindHasField(JobKind kind, const std::string& field) {
  for (const auto& [name, kinds] : KindSpecificFields()) {
    if (name != field) continue;
    for (JobKind k : kinds) {
      if (k == kind) return true;
    }
  }
  return false;
}

const std::set<std::string>& ModelledMetadataFields() {
  static const auto* fields = new std::set<std::string>{
      "name",       "namespace",         "uid",    "resourceVersion", "generateName",
      "generation", "creationTimestamp", "labels", "annotations",     "deletionTimestamp"};
  return *fields;
}

}  // namespace coach::api::v1::codec
