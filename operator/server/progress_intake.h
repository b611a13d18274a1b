#pragma once

// ProgressIntake: ReportProgress without gRPC. In order:
//   1. the caller is a pod (PodTokenAuth: its projected token of audience "coach");
//   2. the request holds to its rules (progress_request.h);
//   3. the pod reports for itself (AuthorizeProgressReport): the namespace and pod it names
//      are its own; the backend then checks that a replica pod of a job it runs has that name
//      and the token's pod UID;
//   4. the backend keeps the report (backend::ProgressReceiver: one per second per pod,
//      bounded, the operator's clock).
// So a pod's token lets it say one thing, about itself, and no more often than once a second.
//
// Report's errors: those of each step, in that order: Unauthenticated, Unavailable,
// PermissionDenied (PodTokenAuth); InvalidArgument; PermissionDenied; PermissionDenied,
// ResourceExhausted, Unavailable (the receiver).

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/v1/training_service.pb.h"
#include "operator/backend/progress_receiver.h"
#include "operator/server/pod_token_auth.h"

namespace coach::server {

// OK when `who` may send `request`: it names `who`'s own namespace and pod. PermissionDenied
// otherwise, naming both pods.
absl::Status AuthorizeProgressReport(const PodIdentity& who,
                                     const api::v1::ReportProgressRequest& request);

class ProgressIntake {
 public:
  // Neither is owned; both outlive this.
  ProgressIntake(PodTokenAuth* auth, backend::ProgressReceiver* receiver)
      : auth_(auth), receiver_(receiver) {}

  // The answer to the pod: kept or dropped (the pod reported less than a second ago), and its
  // launch directive where its job has one. Thread-safe.
  absl::StatusOr<api::v1::ReportProgressResponse> Report(
      const std::string* authorization_header, const api::v1::ReportProgressRequest& request);

 private:
  PodTokenAuth* const auth_;
  backend::ProgressReceiver* const receiver_;
};

}  // namespace coach::server
