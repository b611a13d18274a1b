#pragma once

// CallAuthorizer: the checks in front of every TrainingService call, without gRPC.
// Authenticate first, then the rights the call needs (access_rules.h) on the job's kind:
//   - a call that names a job (get, delete, suspend, resume, describe, logs) asks about the
//     job's kind, looked up by the operator. When no job has that name the caller learns
//     NotFound only if they may do the verb on some job kind there, else PermissionDenied,
//     so that existence does not leak to someone who may not look (as the API server does);
//   - CreateJob asks about the kind and namespace of the admitted job (after defaulting);
//   - ListJobs and WatchJobs span every kind: the caller gets the kinds they may list/watch
//     there (KindFilter) and PermissionDenied when there is none.
// With ApiAuth::Authorizes() false (modes none and token) only Authenticate does anything.
//
// Error codes: those of ApiAuth (Unauthenticated, PermissionDenied, Unavailable), and the
// job lookup's (InvalidArgument: name empty; Unavailable).

#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/v1/training_job.pb.h"
#include "operator/core/job_service.h"
#include "operator/server/access_rules.h"
#include "operator/server/api_auth.h"

namespace coach::server {

// The job kinds a caller may see in a ListJobs/WatchJobs answer.
class KindFilter {
 public:
  static KindFilter All() { return KindFilter(true, {}); }
  static KindFilter Only(std::set<api::v1::JobKind> kinds) {
    return KindFilter(false, std::move(kinds));
  }
  bool all() const { return all_; }
  bool Allows(const api::v1::TrainingJob& job) const {
    return all_ || kinds_.count(job.kind()) > 0;
  }

 private:
  KindFilter(bool all, std::set<api::v1::JobKind> kinds) : all_(all), kinds_(std::move(kinds)) {}
  bool all_;
  std::set<api::v1::JobKind> kinds_;
};

class CallAuthorizer {
 public:
  // Neither is owned; both outlive this.
  CallAuthorizer(ApiAuth* auth, core::JobService* jobs) : auth_(auth), jobs_(jobs) {}

  absl::StatusOr<UserInfo> Authenticate(const std::string* authorization_header) {
    return auth_->Authenticate(authorization_header);
  }

  // CreateJob of `admitted` (namespace set by Admission).
  absl::Status ForNewJob(const UserInfo& user, const api::v1::TrainingJob& admitted);
  // A call naming the job `name` in `ns` ("" = "default", as JobService reads it).
  absl::Status ForJob(const UserInfo& user, ApiCall call, const std::string& ns,
                      const std::string& name);
  // ListJobs / WatchJobs in `ns` ("" = every namespace), optionally of one job `name`.
  absl::StatusOr<KindFilter> ForCollection(const UserInfo& user, ApiCall call,
                                           const std::string& ns, const std::string& name = "");

 private:
  // Every attribute `call` needs on `plural`: the first refusal, or OK.
  absl::Status Check(const UserInfo& user, ApiCall call, std::string_view plural,
                     const std::string& ns, const std::string& name);

  ApiAuth* const auth_;
  core::JobService* const jobs_;
};

}  // namespace coach::server
