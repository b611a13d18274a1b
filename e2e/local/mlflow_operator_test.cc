#include "e2e/local/mlflow_operator_test.h"

#include "integrations/mlflow/testing/mlflow_server.h"

namespace coach::e2e {

using api::v1::TrainingJob;
using mlflow::testing::MlflowServer;

void MlflowOperatorTest::StartWithMlflow(const std::string& uri,
                                         const std::vector<std::string>& extra,
                                         const std::string& experiment, const std::string& name) {
  OperatorOptions options;
  options.extra_args = {"--mlflow-tracking-uri=" + uri, "--mlflow-experiment=" + experiment,
                        "--mlflow-max-backoff=1"};
  options.extra_args.insert(options.extra_args.end(), extra.begin(), extra.end());
  StartOperator(options, name);
}

std::string MlflowOperatorTest::RunIdOf(const std::string& name, absl::Duration timeout) {
  absl::StatusOr<TrainingJob> job = op_->WaitJob(
      name,
      [](const TrainingJob& j) { return j.metadata().annotations().count(kRunIdAnnotation) > 0; },
      timeout);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? job->metadata().annotations().at(kRunIdAnnotation) : "";
}

nlohmann::json MlflowOperatorTest::ReadRun(const std::string& run_id,
                                           const std::vector<std::string>& extra) {
  std::vector<std::string> args = {run_id};
  args.insert(args.end(), extra.begin(), extra.end());
  absl::StatusOr<std::string> out =
      MlflowServer::RunPython("read_run.py", args, {{"MLFLOW_TRACKING_URI", uri_}});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? nlohmann::json::parse(*out) : nlohmann::json::object();
}

}  // namespace coach::e2e
