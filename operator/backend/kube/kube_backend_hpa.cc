// KubeBackend's side of an elastic PyTorchJob's HorizontalPodAutoscaler (hpa.h): on the leader's
// every Observe of a job, the step NextHpaStep names, taken through the client. The HPA's watch
// is one of the backend's caches (selected on coach.dev/job-name, spec kept), so a pass makes no
// request while the HPA is as the job wants it, and the create and delete expectations keep a
// lagging cache from sending one twice.

#include <spdlog/spdlog.h>

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "operator/backend/kube/hpa.h"
#include "operator/backend/kube/kube_backend.h"
#include "operator/backend/kube/object_fields.h"

namespace coach::backend::kube {

using nlohmann::json;

namespace {

std::string HpaKeyOf(const model::Job& job) {
  return absl::StrCat(kHpaKind, "/", job.metadata().name());
}

}  // namespace

absl::Status KubeBackend::TendHpa(const model::Job& job) {
  if (!TendsHpa(job)) return absl::OkStatus();
  absl::StatusOr<std::optional<json>> desired = DesiredHpa(job);
  if (!desired.ok()) {
    // The pass fails such a job, naming the field; its HPA, if any, stays as it is.
    spdlog::debug("kube backend: no HorizontalPodAutoscaler for {}: {}", JobKeyOf(job),
                  desired.status().ToString());
    return absl::OkStatus();
  }
  const std::string& ns = job.metadata().namespace_();
  const std::string job_key = JobKeyOf(job);
  json cached;
  HpaView view;
  {
    absl::MutexLock lock(&mu_);
    if (!started_ || !WatchesLocked(kHpaKind)) return absl::OkStatus();
    SettleLocked(job_key);
    // Not the job's unless it names the job's uid: an earlier job of the name may own it still.
    const json* found = CachedLocked(kHpaKind, ns, job.metadata().name());
    if (found != nullptr && OwnedByJob(*found, job.metadata().uid())) {
      cached = *found;
      view.cached = &cached;
    }
    const Expectations::ObjectMap& expected = expectations_.Of(job_key);
    if (auto e = expected.find(HpaKeyOf(job)); e != expected.end()) {
      (e->second.create ? view.create_pending : view.delete_pending) = true;
    }
    if (auto w = hpa_written_.find(job_key); w != hpa_written_.end()) {
      view.written_spec = w->second.first;
      view.answered_spec = w->second.second;
    }
  }
  const HpaStep step = NextHpaStep(*desired, view);
  if (step != HpaStep::kNone) {
    spdlog::info("kube backend: {} HorizontalPodAutoscaler {}", HpaStepName(step), job_key);
  }
  switch (step) {
    case HpaStep::kCreate:
      return CreateHpa(job, **desired);
    case HpaStep::kPatch:
      return PatchHpa(job, **desired, cached);
    case HpaStep::kDelete:
      return DeleteHpa(job, cached);
    case HpaStep::kNone:
      break;
  }
  return absl::OkStatus();
}

absl::Status KubeBackend::CreateHpa(const model::Job& job, const json& desired) {
  const std::string& ns = job.metadata().namespace_();
  const std::string job_key = JobKeyOf(job);
  Raise(job_key, HpaKeyOf(job), Expectation{true, Now(), desired});
  absl::StatusOr<json> created = options_.client->Create(HorizontalPodAutoscalers(), ns, desired);
  if (created.ok()) {
    RememberHpaWrite(job_key, desired, *created);
    return absl::OkStatus();
  }
  if (!absl::IsAlreadyExists(created.status())) {
    Lower(job_key, HpaKeyOf(job));
    return created.status();
  }
  // Outside the cache: made before coach's label was on it (by upstream's operator, which coach
  // replaced), or by someone else under the job's name, or the cache lags.
  absl::StatusOr<json> current =
      options_.client->Get(HorizontalPodAutoscalers(), ns, job.metadata().name());
  if (!current.ok() || !OwnedByJob(*current, job.metadata().uid())) {
    Lower(job_key, HpaKeyOf(job));
    if (!current.ok())
      return absl::IsNotFound(current.status()) ? absl::OkStatus() : current.status();
    spdlog::warn(
        "kube backend: HorizontalPodAutoscaler {} exists and is not this job's (its owners do "
        "not name uid {}); left as it is",
        job_key, job.metadata().uid());
    return absl::OkStatus();
  }
  // The job's: the patch labels it, so the cache shows it and meets the expectation.
  return PatchHpa(job, desired, *current);
}

absl::Status KubeBackend::PatchHpa(const model::Job& job, const json& desired,
                                   const json& current) {
  absl::StatusOr<json> patched = options_.client->Patch(
      HorizontalPodAutoscalers(), job.metadata().namespace_(), job.metadata().name(),
      coach::kubeclient::PatchType::kMerge, HpaPatch(desired, current));
  if (patched.ok()) {
    RememberHpaWrite(JobKeyOf(job), desired, *patched);
    return absl::OkStatus();
  }
  // Gone meanwhile: the watch's deletion event brings the pass that creates it again.
  return absl::IsNotFound(patched.status()) ? absl::OkStatus() : patched.status();
}

absl::Status KubeBackend::DeleteHpa(const model::Job& job, const json& current) {
  const std::string job_key = JobKeyOf(job);
  Raise(job_key, HpaKeyOf(job), Expectation{false, Now(), json()});
  {
    absl::MutexLock lock(&mu_);
    hpa_written_.erase(job_key);
  }
  coach::kubeclient::DeleteOptions options;
  options.propagation = coach::kubeclient::PropagationPolicy::kBackground;
  // Only the instance the cache showed: a newer one of the name is not this pass's to delete.
  if (std::string uid = StringField(Field(current, "metadata"), "uid"); !uid.empty()) {
    options.precondition_uid = std::move(uid);
  }
  absl::Status deleted = options_.client->Delete(
      HorizontalPodAutoscalers(), job.metadata().namespace_(), job.metadata().name(), options);
  if (deleted.ok()) return absl::OkStatus();
  Lower(job_key, HpaKeyOf(job));
  return absl::IsNotFound(deleted) || absl::IsAborted(deleted) ? absl::OkStatus() : deleted;
}

void KubeBackend::RememberHpaWrite(const std::string& job_key, const json& desired,
                                   const json& answer) {
  absl::MutexLock lock(&mu_);
  hpa_written_[job_key] = {Field(desired, "spec").dump(), Field(answer, "spec").dump()};
}

}  // namespace coach::backend::kube
