#pragma once

// coach::api::v1::TrainingJob -> kubeflow.org/v1 manifests (the codec's contract is in
// job_codec.h: round trip and normalisation).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/v1/training_job.pb.h"

namespace coach::api::v1::codec {

// The manifest of `job` (apiVersion, kind, metadata, spec, status when set). Writes only
// the fields of the job's kind.
nlohmann::json JobToJson(const TrainingJob& job);

// One job as a YAML document (no leading "---").
std::string JobToYamlString(const TrainingJob& job);
// Every job as its own YAML document, each preceded by "---".
std::string JobsToYaml(const std::vector<TrainingJob>& jobs);
// One job: its manifest object; otherwise a `kind: List` (apiVersion v1) of them;
// pretty-printed with two-space indentation and a trailing newline.
std::string JobsToJson(const std::vector<TrainingJob>& jobs);

}  // namespace coach::api::v1::codec
