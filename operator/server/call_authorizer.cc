#include "operator/server/call_authorizer.h"

#include "absl/strings/str_cat.h"
#include "api/v1/kinds.h"

namespace coach::server {

absl::Status CallAuthorizer::Check(const UserInfo& user, ApiCall call, std::string_view plural,
                                   const std::string& ns, const std::string& name) {
  for (const ResourceAttributes& attrs : RequiredAccess(call, plural, ns, name)) {
    if (absl::Status s = auth_->Authorize(user, attrs); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CallAuthorizer::ForNewJob(const UserInfo& user, const api::v1::TrainingJob& admitted) {
  if (!auth_->Authorizes()) return absl::OkStatus();
  const api::v1::KindInfo* kind = api::v1::FindKind(admitted.kind());
  // Admission refuses a job without a kind; never authorize what cannot be named.
  if (kind == nullptr) return absl::InvalidArgumentError("kind: required");
  return Check(user, ApiCall::kCreateJob, kind->plural, admitted.metadata().namespace_(),
               admitted.metadata().name());
}

absl::Status CallAuthorizer::ForJob(const UserInfo& user, ApiCall call, const std::string& ns,
                                    const std::string& name) {
  if (!auth_->Authorizes()) return absl::OkStatus();
  if (name.empty()) return absl::InvalidArgumentError("name: required");
  const std::string job_ns = ns.empty() ? "default" : ns;
  absl::StatusOr<api::v1::TrainingJob> job = jobs_->Get(job_ns, name);
  if (job.ok()) {
    const api::v1::KindInfo* kind = api::v1::FindKind(job->kind());
    if (kind == nullptr) return absl::InternalError("stored job without a kind");
    return Check(user, call, kind->plural, job_ns, name);
  }
  if (!absl::IsNotFound(job.status())) return job.status();
  // No such job: NotFound for whoever could have done this to a job of some kind there,
  // otherwise the refusal for the first kind (PyTorchJob, the common one).
  absl::Status first_refusal;
  for (const api::v1::KindInfo& kind : api::v1::AllKinds()) {
    absl::Status s = Check(user, call, kind.plural, job_ns, name);
    if (s.ok()) return job.status();
    if (!absl::IsPermissionDenied(s)) return s;
    if (first_refusal.ok()) first_refusal = s;
  }
  return first_refusal;
}

absl::StatusOr<KindFilter> CallAuthorizer::ForCollection(const UserInfo& user, ApiCall call,
                                                         const std::string& ns,
                                                         const std::string& name) {
  if (!auth_->Authorizes()) return KindFilter::All();
  std::set<api::v1::JobKind> allowed;
  absl::Status first_refusal;
  for (const api::v1::KindInfo& kind : api::v1::AllKinds()) {
    absl::Status s = Check(user, call, kind.plural, ns, name);
    if (s.ok()) {
      allowed.insert(kind.kind);
    } else if (!absl::IsPermissionDenied(s)) {
      return s;
    } else if (first_refusal.ok()) {
      first_refusal = s;
    }
  }
  if (allowed.empty()) return first_refusal;
  if (allowed.size() == api::v1::AllKinds().size()) return KindFilter::All();
  return KindFilter::Only(std::move(allowed));
}

}  // namespace coach::server
