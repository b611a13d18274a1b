#include "operator/backend/local/job_store.h"

namespace coach::backend::local {

JobKey KeyOf(const api::v1::TrainingJob& job) {
  return JobKey{job.metadata().namespace_(), job.metadata().name()};
}

}  // namespace coach::backend::local
