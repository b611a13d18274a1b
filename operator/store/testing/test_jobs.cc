#include "operator/store/testing/test_jobs.h"

namespace coach::store::testing {

api::v1::TrainingJob MakeJob(const std::string& ns, const std::string& name) {
  api::v1::TrainingJob job;
  job.set_kind(api::v1::PYTORCH_JOB);
  job.mutable_metadata()->set_namespace_(ns);
  job.mutable_metadata()->set_name(name);
  auto& worker = (*job.mutable_spec()->mutable_replica_specs())["Worker"];
  worker.set_replicas(2);
  worker.set_restart_policy("OnFailure");
  worker.set_template_json(R"({"spec":{"containers":[{"name":"pytorch","image":"x"}]}})");
  return job;
}

}  // namespace coach::store::testing
