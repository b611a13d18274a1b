#pragma once

// Pieces of the job decoder that the TrainJob decoder (train_job_decoder.cc) shares with the
// kubeflow.org/v1 one (job_decoder.cc); internal to this package.

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "api/v1/codec/field_decoder.h"
#include "api/v1/training_job.pb.h"

namespace coach::api::v1::codec::internal {

void DecodeMetadata(FieldDecoder& d, const nlohmann::json& v, ObjectMeta* meta);

// The fields of status.coach (CoachJobStatus).
const std::set<std::string>& CoachStatusFields();
// The fields of a v1 job's status besides `coach` (conditions, replicaStatuses, times).
const std::set<std::string>& JobStatusFields();

// CoachStatusFields of the object `v` at `path`; `check_unknown`: any other field is an error.
void DecodeCoachStatus(FieldDecoder& d, const nlohmann::json& v, const std::string& path,
                       bool check_unknown, CoachJobStatus* coach);
// JobStatusFields of the object `v` at `path` (other fields are not looked at).
void DecodeStatusFields(FieldDecoder& d, const nlohmann::json& v, const std::string& path,
                        TrainingJobStatus* status);

// spec and status of a trainer.kubeflow.org/v1alpha1 TrainJob (train_job_decoder.cc).
void DecodeTrainJobSpec(FieldDecoder& d, const nlohmann::json& v, TrainingJobSpec* spec);
void DecodeTrainJobStatus(FieldDecoder& d, const nlohmann::json& v, TrainingJobStatus* status);
// What a TrainJob says in coach's annotations (coach.dev/ttl-seconds-after-finished) into the spec.
void DecodeTrainJobAnnotations(FieldDecoder& d, const ObjectMeta& meta, TrainingJobSpec* spec);

}  // namespace coach::api::v1::codec::internal
