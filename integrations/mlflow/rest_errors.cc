#include "integrations/mlflow/rest_errors.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace coach::mlflow::internal {

using json = nlohmann::json;

absl::Status MapHttpError(long s, absl::string_view body, absl::string_view what) {
  if (s >= 200 && s < 300) return absl::OkStatus();
  std::string error_code;
  std::string message;
  json parsed = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object()) {
    if (auto it = parsed.find("error_code"); it != parsed.end() && it->is_string()) {
      error_code = it->get<std::string>();
    }
    if (auto it = parsed.find("message"); it != parsed.end() && it->is_string()) {
      message = it->get<std::string>();
    }
  } else {
    message = std::string(absl::StripAsciiWhitespace(body));
  }
  if (message.size() > 500) message = absl::StrCat(message.substr(0, 500), "...");
  std::string text = absl::StrCat("MLflow ", what, ": HTTP ", s, error_code.empty() ? "" : " ",
                                  error_code, message.empty() ? "" : ": ", message);
  if (s == 408 || s == 429 || s >= 500) return absl::UnavailableError(text);
  if (s == 401) return absl::UnauthenticatedError(text);
  if (s == 403) return absl::PermissionDeniedError(text);
  if (error_code == "RESOURCE_DOES_NOT_EXIST") return absl::NotFoundError(text);
  if (error_code == "RESOURCE_ALREADY_EXISTS" || error_code == "RESOURCE_CONFLICT") {
    return absl::AlreadyExistsError(text);
  }
  if (error_code == "INVALID_PARAMETER_VALUE" || error_code == "BAD_REQUEST" ||
      error_code == "MALFORMED_REQUEST") {
    return absl::InvalidArgumentError(text);
  }
  if (error_code == "UNAUTHENTICATED") return absl::UnauthenticatedError(text);
  if (error_code == "PERMISSION_DENIED") return absl::PermissionDeniedError(text);
  switch (s) {
    case 400:
      return absl::InvalidArgumentError(text);
    case 404:
      return absl::NotFoundError(text);
    case 409:
      return absl::AlreadyExistsError(text);
    default:
      return absl::FailedPreconditionError(text);
  }
}

std::string RedactUri(absl::string_view uri) {
  size_t scheme = uri.find("://");
  size_t start = scheme == absl::string_view::npos ? 0 : scheme + 3;
  size_t end = uri.find('/', start);
  absl::string_view authority =
      uri.substr(start, end == absl::string_view::npos ? absl::string_view::npos : end - start);
  size_t at = authority.rfind('@');
  if (at == absl::string_view::npos) return std::string(uri);
  return absl::StrCat(uri.substr(0, start), authority.substr(at + 1),
                      end == absl::string_view::npos ? "" : uri.substr(end));
}

}  // namespace coach::mlflow::internal
