#include "api/v1/field_error.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace coach::api::v1 {

std::string FormatFieldError(const FieldError& error) {
  if (error.path.empty()) return error.message;
  return absl::StrCat(error.path, ": ", error.message);
}

absl::Status FieldErrorsToStatus(const std::vector<FieldError>& errors, const std::string& prefix) {
  if (errors.empty()) return absl::OkStatus();
  std::vector<std::string> lines;
  lines.reserve(errors.size());
  for (const FieldError& error : errors) {
    lines.push_back(absl::StrCat(prefix, FormatFieldError(error)));
  }
  return absl::InvalidArgumentError(absl::StrJoin(lines, "\n"));
}

}  // namespace coach::api::v1
