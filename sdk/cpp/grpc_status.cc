#include "sdk/cpp/grpc_status.h"

#include "absl/strings/str_cat.h"

namespace coach::sdk {

absl::Status FromGrpcStatus(const grpc::Status& status, const std::string& what,
                            const std::string& server) {
  if (status.ok()) return absl::OkStatus();
  int code = static_cast<int>(status.error_code());
  absl::StatusCode absl_code =
      (code > 0 && code <= static_cast<int>(absl::StatusCode::kUnauthenticated))
          ? static_cast<absl::StatusCode>(code)
          : absl::StatusCode::kUnknown;
  std::string message = status.error_message();
  if (absl_code == absl::StatusCode::kUnavailable && !server.empty()) {
    message = absl::StrCat("coach-operator at ", server, " is unavailable: ", message);
  }
  return absl::Status(absl_code, absl::StrCat(what, ": ", message));
}

}  // namespace coach::sdk
