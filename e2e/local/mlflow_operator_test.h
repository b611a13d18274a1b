#pragma once

// MlflowOperatorTest: base of the local suites that track into a real `mlflow server`
// (integrations/mlflow/testing/mlflow_server.h): op_ started with MLflow tracking, the run the
// operator made for a job, and a run read back with the MLflow Python client.

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "e2e/local/operator_fixture.h"
#include "nlohmann/json.hpp"

namespace coach::e2e {

// The job annotation that names the job's MLflow run.
inline constexpr char kRunIdAnnotation[] = "coach.dev/mlflow-run-id";

class MlflowOperatorTest : public OperatorTest {
 protected:
  // StartOperator(options, name) with --mlflow-tracking-uri=`uri`, --mlflow-experiment=
  // `experiment`, --mlflow-max-backoff=1 and `extra`; --mlflow-run-wait stays the operator's
  // default (120 s), what users get.
  void StartWithMlflow(const std::string& uri, const std::vector<std::string>& extra = {},
                       const std::string& experiment = "e2e", const std::string& name = "");

  // The run of job `name` once the operator has written it on the job; "" (and a failure)
  // when that does not happen within `timeout`.
  std::string RunIdOf(const std::string& name, absl::Duration timeout = absl::Seconds(60));

  // read_run.py of `run_id` on uri_ with `extra` arguments: the run as JSON; an empty object
  // (and a failure) when it cannot be read.
  nlohmann::json ReadRun(const std::string& run_id, const std::vector<std::string>& extra = {});

  // Where runs are read from: the server itself, also when the operator tracks through a
  // proxy of it.
  std::string uri_;
};

}  // namespace coach::e2e
