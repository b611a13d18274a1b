// KubeBackend's side of the pods' progress reports (progress_receiver.h): each report kept for
// a pod the cache holds with the report's UID (progress_book.h), and the answer: the job's launch
// directive for a job that restarts in place, and whether the operator deletes the pod itself.

#include "absl/strings/str_cat.h"
#include "operator/backend/kube/kube_backend.h"

namespace coach::backend::kube {

void KubeBackend::DirectLaunchers(const model::Job& job,
                                  const std::optional<model::LaunchDirective>& directive) {
  absl::MutexLock lock(&directives_mu_);
  if (directive) {
    directives_[JobKeyOf(job)] = *directive;
  } else {
    directives_.erase(JobKeyOf(job));
  }
}

absl::StatusOr<ProgressReceipt> KubeBackend::ReceiveProgress(const PodReport& report) {
  auto count = [this](const char* outcome) {
    if (coach::metrics::Family* f = progress_reports_.load()) f->Add({outcome});
  };
  const std::string pod_key = absl::StrCat(report.namespace_, "/", report.pod);
  std::string job_key;
  ProgressBook::Recorded recorded;
  ProgressReceipt receipt;
  {
    // A reader: reports of many pods go on at once; the book has its own lock. Holding mu_
    // keeps a pod's deletion (OnEvent) from passing between the check and the record.
    absl::ReaderMutexLock lock(&mu_);
    if (!started_) {
      return absl::UnavailableError(
          "this operator replica does not reconcile jobs (not the leader, or starting)");
    }
    std::optional<PodJob> job = CachedPodJobLocked(report.namespace_, report.pod, report.pod_uid);
    if (!job) {
      count("refused");
      return absl::PermissionDeniedError(
          absl::StrCat("pod ", pod_key, " (uid ", report.pod_uid,
                       ") is not a replica of a job this operator runs"));
    }
    job_key = job->key;
    receipt.job_uid = job->uid;
    recorded = progress_.Record(pod_key, report.pod_uid, job_key, report.report, Now());
    receipt.stopping = recorded.stopping;
    absl::MutexLock directives(&directives_mu_);
    if (auto it = directives_.find(job_key); it != directives_.end()) receipt.launch = it->second;
  }
  switch (recorded.outcome) {
    case ProgressBook::Outcome::kFull:
      count("full");
      return absl::ResourceExhaustedError(
          "the operator holds progress reports of as many pods as it may; this pod's are dropped");
    case ProgressBook::Outcome::kTooSoon:
      count("dropped");
      return receipt;
    case ProgressBook::Outcome::kAccepted:
      break;
  }
  count("accepted");
  if (recorded.notify_job) Notify({job_key});
  receipt.accepted = true;
  return receipt;
}

}  // namespace coach::backend::kube
