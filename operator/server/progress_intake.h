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
// Checkpoint on notice (backend::CheckpointChannel), with a CheckpointBook: when the receiver
// names the pod's job (ProgressReceipt::job_uid), the pod's answer to its job's checkpoint
// request is kept (dropped reports' too), and the answer to the report carries the job's standing
// request, if any.
//
// Report's errors: those of each step, in that order: Unauthenticated, Unavailable,
// PermissionDenied (PodTokenAuth); InvalidArgument (the checkpoint answer's too); PermissionDenied;
// PermissionDenied, ResourceExhausted, Unavailable (the receiver).

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "api/v1/training_service.pb.h"
#include "common/clock.h"
#include "operator/backend/progress_receiver.h"
#include "operator/server/pod_token_auth.h"

namespace coach::server {

inline constexpr size_t kMaxCheckpointMessage = 256;

// OK when `who` may send `request`: it names `who`'s own namespace and pod. PermissionDenied
// otherwise, naming both pods.
absl::Status AuthorizeProgressReport(const PodIdentity& who,
                                     const api::v1::ReportProgressRequest& request);

// A report's checkpoint answer: request_id >= 1, step >= 0, message at most
// kMaxCheckpointMessage bytes of printable ASCII. InvalidArgument naming each bad field
// ("checkpoint.step: ...").
absl::Status ValidateCheckpointReport(const api::v1::CheckpointReport& report);

struct CheckpointBookOptions {
  Clock* clock = Clock::Real();  // not owned
  // Jobs with a request held at once; pods' answers kept per request.
  size_t max_jobs = 10000;
  size_t max_pods_per_job = 10000;
};

// The operator's checkpoint requests and the pods' answers, in memory: an operator restart
// forgets them (the reconciler asks again; ids still increase: they start from the wall clock's
// milliseconds). Thread-safe.
class CheckpointBook : public backend::CheckpointChannel {
 public:
  explicit CheckpointBook(CheckpointBookOptions options = {}) : options_(options) {}

  // The id: the clock's Unix milliseconds, or one more than the job's previous id when that is
  // not below them.
  absl::StatusOr<int64_t> RequestCheckpoint(const std::string& job_uid,
                                            absl::Duration grace) override;
  absl::StatusOr<backend::CheckpointState> GetCheckpointState(const std::string& job_uid,
                                                              int64_t id) const override;
  absl::StatusOr<backend::CheckpointState> NewestCheckpoint(
      const std::string& job_uid) const override;
  void ForgetCheckpoints(const std::string& job_uid) override;

  // The job's request, for the answers to its pods' reports; none when it has none.
  std::optional<api::v1::CheckpointRequest> Standing(const std::string& job_uid) const;
  // `pod`'s answer (a valid one: ValidateCheckpointReport), kept when it answers the job's
  // request; an answer to another id, of a job without a request, or of a pod beyond
  // max_pods_per_job is ignored.
  void Answer(const std::string& job_uid, const std::string& pod,
              const api::v1::CheckpointReport& report);

  size_t jobs() const;

 private:
  const CheckpointBookOptions options_;
  mutable absl::Mutex mu_;
  std::map<std::string, backend::CheckpointState> jobs_ ABSL_GUARDED_BY(mu_);
};

class ProgressIntake {
 public:
  // None is owned; all outlive this. `checkpoints` may be null: no checkpoint requests.
  ProgressIntake(PodTokenAuth* auth, backend::ProgressReceiver* receiver,
                 CheckpointBook* checkpoints = nullptr)
      : auth_(auth), receiver_(receiver), checkpoints_(checkpoints) {}

  // The answer to the pod: kept or dropped (the pod reported less than a second ago), its
  // launch directive where its job has one, and its job's checkpoint request (file comment).
  // Thread-safe.
  absl::StatusOr<api::v1::ReportProgressResponse> Report(
      const std::string* authorization_header, const api::v1::ReportProgressRequest& request);

 private:
  PodTokenAuth* const auth_;
  backend::ProgressReceiver* const receiver_;
  CheckpointBook* const checkpoints_;
};

}  // namespace coach::server
