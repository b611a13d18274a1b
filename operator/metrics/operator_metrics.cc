#include "operator/metrics/operator_metrics.h"

namespace coach::metrics {

OperatorMetrics::OperatorMetrics(Registry* r) : registry(r) {
  const std::vector<std::string> job_labels = {"job_namespace", "framework"};
  jobs_created =
      r->Counter("training_operator_jobs_created_total", "Number of jobs created", job_labels);
  jobs_deleted =
      r->Counter("training_operator_jobs_deleted_total", "Number of jobs deleted", job_labels);
  jobs_successful = r->Counter("training_operator_jobs_successful_total",
                               "Number of jobs that succeeded", job_labels);
  jobs_failed =
      r->Counter("training_operator_jobs_failed_total", "Number of jobs that failed", job_labels);
  jobs_restarted = r->Counter("training_operator_jobs_restarted_total",
                              "Number of times jobs entered the Restarting condition", job_labels);
  jobs_ttl_deleted = r->Counter("coach_jobs_ttl_deleted_total",
                                "Jobs deleted because ttlSecondsAfterFinished expired", job_labels);
  admission_rejected = r->Counter("coach_admission_rejected_total",
                                  "CreateJob requests refused, by reason", {"reason"});
  reconcile_duration =
      r->Histogram("coach_reconcile_duration_seconds", "Time of one reconcile pass of one job",
                   Registry::ExponentialBuckets(0.0005, 2, 16));
  reconcile_total = r->Counter("coach_reconcile_total", "Reconcile passes by result", {"result"});
  actions_total =
      r->Counter("coach_backend_actions_total", "Actions applied to the backend by type and result",
                 {"type", "result"});
  workqueue_depth = r->Gauge("coach_workqueue_depth", "Jobs waiting to be reconciled");
  workqueue_delayed =
      r->Gauge("coach_workqueue_delayed", "Jobs waiting for a timer (deadline, TTL, backoff)");
  replicas = r->Gauge("coach_replicas", "Replicas of all jobs by observed phase", {"phase"});
  jobs = r->Gauge("coach_jobs", "Jobs by current state", {"state"});
  watchers = r->Gauge("coach_watchers", "Open WatchJobs streams");
  watchers_dropped = r->Counter("coach_watchers_dropped_total",
                                "Watch streams dropped because the client fell behind");
  backend_up = r->Gauge("coach_backend_up", "1 when the backend is started");
}

}  // namespace coach::metrics
