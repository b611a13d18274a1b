#include "operator/server/progress_intake.h"

#include <google/protobuf/util/time_util.h>

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1/field_error.h"
#include "operator/server/progress_request.h"

namespace coach::server {

absl::Status ValidateCheckpointReport(const api::v1::CheckpointReport& report) {
  std::vector<api::v1::FieldError> errors;
  if (report.request_id() < 1) {
    errors.push_back(
        {"checkpoint.request_id", absl::StrCat("must be >= 1, got ", report.request_id())});
  }
  if (report.step() < 0) {
    errors.push_back({"checkpoint.step", absl::StrCat("must be >= 0, got ", report.step())});
  }
  const std::string& message = report.message();
  if (message.size() > kMaxCheckpointMessage) {
    errors.push_back({"checkpoint.message", absl::StrCat("at most ", kMaxCheckpointMessage,
                                                         " bytes, got ", message.size())});
  } else if (!std::all_of(message.begin(), message.end(),
                          [](char c) { return c >= ' ' && c <= '~'; })) {
    errors.push_back({"checkpoint.message", "must be printable ASCII"});
  }
  return api::v1::FieldErrorsToStatus(errors);
}

absl::StatusOr<int64_t> CheckpointBook::RequestCheckpoint(const std::string& job_uid,
                                                          absl::Duration grace) {
  if (job_uid.empty()) return absl::InvalidArgumentError("RequestCheckpoint: no job uid");
  if (grace <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("RequestCheckpoint: grace must be > 0, got ", absl::FormatDuration(grace)));
  }
  const absl::Time now = options_.clock->Now();
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_uid);
  if (it == jobs_.end() && jobs_.size() >= options_.max_jobs) {
    return absl::ResourceExhaustedError(absl::StrCat("checkpoint requests of ", jobs_.size(),
                                                     " jobs are held, the most there may be"));
  }
  // Launchers act only on ids above those they acted on, and they outlive an operator restart
  // that empties this book: the wall clock carries the order across it.
  int64_t id = std::max<int64_t>(absl::ToUnixMillis(now), 1);
  if (it != jobs_.end()) id = std::max(id, it->second.id + 1);
  backend::CheckpointState& state = jobs_[job_uid];
  state = backend::CheckpointState{id, now + grace, {}};
  return id;
}

absl::StatusOr<backend::CheckpointState> CheckpointBook::GetCheckpointState(
    const std::string& job_uid, int64_t id) const {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_uid);
  if (it == jobs_.end() || it->second.id != id) {
    return absl::NotFoundError(
        absl::StrCat("job ", job_uid, " has no checkpoint request ", id,
                     it == jobs_.end() ? std::string(" (none held)")
                                       : absl::StrCat(" (its newest is ", it->second.id, ")")));
  }
  return it->second;
}

absl::StatusOr<backend::CheckpointState> CheckpointBook::NewestCheckpoint(
    const std::string& job_uid) const {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_uid);
  if (it == jobs_.end()) {
    return absl::NotFoundError(absl::StrCat("job ", job_uid, " has no checkpoint request"));
  }
  return it->second;
}

void CheckpointBook::ForgetCheckpoints(const std::string& job_uid) {
  absl::MutexLock lock(&mu_);
  jobs_.erase(job_uid);
}

std::optional<api::v1::CheckpointRequest> CheckpointBook::Standing(
    const std::string& job_uid) const {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_uid);
  if (it == jobs_.end()) return std::nullopt;
  api::v1::CheckpointRequest request;
  request.set_id(it->second.id);
  *request.mutable_deadline() = google::protobuf::util::TimeUtil::NanosecondsToTimestamp(
      absl::ToUnixNanos(it->second.deadline));
  return request;
}

void CheckpointBook::Answer(const std::string& job_uid, const std::string& pod,
                            const api::v1::CheckpointReport& report) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_uid);
  if (it == jobs_.end() || it->second.id != report.request_id()) return;
  std::map<std::string, backend::CheckpointAnswer>& answers = it->second.answers;
  if (answers.count(pod) == 0 && answers.size() >= options_.max_pods_per_job) return;
  answers[pod] = backend::CheckpointAnswer{report.saved(), report.step(), report.message()};
}

size_t CheckpointBook::jobs() const {
  absl::MutexLock lock(&mu_);
  return jobs_.size();
}

absl::Status AuthorizeProgressReport(const PodIdentity& who,
                                     const api::v1::ReportProgressRequest& request) {
  if (request.namespace_() == who.namespace_ && request.pod() == who.pod_name) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("pod ", who.namespace_, "/", who.pod_name,
                   " may report progress only for itself, not for pod ", request.namespace_(), "/",
                   request.pod()));
}

absl::StatusOr<api::v1::ReportProgressResponse> ProgressIntake::Report(
    const std::string* authorization_header, const api::v1::ReportProgressRequest& request) {
  absl::StatusOr<PodIdentity> who = auth_->Authenticate(authorization_header);
  if (!who.ok()) return who.status();
  if (absl::Status valid = ValidateReportProgressRequest(request); !valid.ok()) return valid;
  if (request.has_checkpoint()) {
    if (absl::Status valid = ValidateCheckpointReport(request.checkpoint()); !valid.ok()) {
      return valid;
    }
  }
  if (absl::Status allowed = AuthorizeProgressReport(*who, request); !allowed.ok()) return allowed;
  backend::PodReport report;
  report.namespace_ = who->namespace_;
  report.pod = who->pod_name;
  report.pod_uid = who->pod_uid;
  report.report = ToProgressReport(request);
  absl::StatusOr<backend::ProgressReceipt> receipt = receiver_->ReceiveProgress(report);
  if (!receipt.ok()) return receipt.status();
  api::v1::ReportProgressResponse response;
  response.set_accepted(receipt->accepted);
  response.set_stopping(receipt->stopping);
  if (receipt->launch) {
    api::v1::LaunchDirective& launch = *response.mutable_launch();
    launch.set_attempt(receipt->launch->attempt);
    launch.set_start(receipt->launch->start);
    launch.set_exit(receipt->launch->exit);
  }
  if (checkpoints_ != nullptr && !receipt->job_uid.empty()) {
    if (request.has_checkpoint()) {
      checkpoints_->Answer(receipt->job_uid, who->pod_name, request.checkpoint());
    }
    if (std::optional<api::v1::CheckpointRequest> standing =
            checkpoints_->Standing(receipt->job_uid)) {
      *response.mutable_checkpoint() = *std::move(standing);
    }
  }
  return response;
}

}  // namespace coach::server
