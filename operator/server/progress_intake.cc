#include "operator/server/progress_intake.h"

#include "absl/strings/str_cat.h"
#include "operator/server/progress_request.h"

namespace coach::server {

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
  if (receipt->launch) {
    api::v1::LaunchDirective& launch = *response.mutable_launch();
    launch.set_attempt(receipt->launch->attempt);
    launch.set_start(receipt->launch->start);
    launch.set_exit(receipt->launch->exit);
  }
  return response;
}

}  // namespace coach::server
