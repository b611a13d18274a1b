#pragma once

// The operator's metrics: upstream's training_operator_* counters (labels job_namespace,
// framework) and coach's own operational series. One instance per process, shared by
// the JobService, the Controller and the HTTP endpoint.

#include "operator/metrics/registry.h"

namespace coach::metrics {

struct OperatorMetrics {
  explicit OperatorMetrics(Registry* registry);

  Registry* registry;
  // Upstream parity, {job_namespace, framework}.
  Family* jobs_created;     // training_operator_jobs_created_total
  Family* jobs_deleted;     // training_operator_jobs_deleted_total
  Family* jobs_successful;  // training_operator_jobs_successful_total
  Family* jobs_failed;      // training_operator_jobs_failed_total
  Family* jobs_restarted;   // training_operator_jobs_restarted_total
  // coach_*.
  Family* jobs_ttl_deleted;    // {job_namespace, framework}
  Family* admission_rejected;  // {reason}: invalid, resource_exhausted, already_exists
  Family* reconcile_duration;  // histogram, seconds
  Family* reconcile_total;     // {result}: ok, error, conflict
  Family* actions_total;       // {type}: create, delete, delete_job; {result}
  Family* workqueue_depth;     // gauge
  Family* workqueue_delayed;   // gauge
  Family* replicas;            // gauge {phase}
  Family* jobs;      // gauge {state}: Created, Running, Restarting, Suspended, Succeeded, Failed
  Family* watchers;  // gauge
  Family* watchers_dropped;  // counter
  Family* backend_up;        // gauge 1/0
};

}  // namespace coach::metrics
