#include "sdk/cpp/testing/test_jobs.h"

namespace coach::sdk::testing {

api::v1::TrainingJob JobWithConditions(const std::string& namespace_, const std::string& name,
                                       const std::vector<std::string>& true_conditions,
                                       const std::string& message) {
  api::v1::TrainingJob job;
  job.set_kind(api::v1::PYTORCH_JOB);
  job.mutable_metadata()->set_namespace_(namespace_);
  job.mutable_metadata()->set_name(name);
  for (const std::string& type : true_conditions) {
    api::v1::JobCondition* condition = job.mutable_status()->add_conditions();
    condition->set_type(type);
    condition->set_status("True");
    condition->set_message(message);
  }
  return job;
}

}  // namespace coach::sdk::testing
