#pragma once

// runs/log-batch bodies within MLflow's limits (tracking_client.h: kMax*PerBatch,
// kMaxBatchJsonBytes).

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "integrations/mlflow/tracking_client.h"

namespace coach::mlflow::internal {

// A log-batch split into requests within the limits, as JSON bodies (without run_id's quoting
// surprises: each body is complete). InvalidArgument for a bad key, a param given twice with
// different values, or one entity larger than kMaxBatchJsonBytes.
absl::StatusOr<std::vector<std::string>> SplitLogBatch(absl::string_view run_id,
                                                       const std::vector<Metric>& metrics,
                                                       const std::vector<Param>& params,
                                                       const std::vector<Tag>& tags);

}  // namespace coach::mlflow::internal
