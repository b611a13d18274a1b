#include "api/v1/codec/job_codec.h"

#include <nlohmann/json.hpp>
#include <vector>

namespace coach::api::v1::codec {

absl::StatusOr<TrainingJob> RecodeJob(const TrainingJob& job) {
  nlohmann::json manifest;
  std::vector<FieldError> errors = EncodeJob(job, &manifest);
  // A field the encoder left out is absent to the decoder: each problem is reported once.
  TrainingJob decoded;
  std::vector<FieldError> decoding = DecodeJob(manifest, &decoded);
  errors.insert(errors.end(), decoding.begin(), decoding.end());
  if (!errors.empty()) return FieldErrorsToStatus(errors);
  return decoded;
}

}  // namespace coach::api::v1::codec
