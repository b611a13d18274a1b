#include "operator/backend/kube/client/errors.h"

#include <cctype>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace coach::kubeclient {

absl::Status GoneError(absl::string_view message) {
  absl::Status s = absl::OutOfRangeError(message);
  s.SetPayload(kGonePayloadUrl, absl::Cord("410"));
  s.SetPayload(kHttpPayloadUrl, absl::Cord("410 Expired"));
  return s;
}

bool IsGone(const absl::Status& status) {
  return absl::IsOutOfRange(status) && status.GetPayload(kGonePayloadUrl).has_value();
}

std::optional<absl::Duration> RetryAfter(const absl::Status& status) {
  auto p = status.GetPayload(kRetryAfterPayloadUrl);
  if (!p.has_value()) return std::nullopt;
  int64_t ms = 0;
  if (!absl::SimpleAtoi(std::string(*p), &ms)) return std::nullopt;
  return absl::Milliseconds(ms);
}

absl::Status WithRetryAfter(absl::Status status, absl::Duration after) {
  status.SetPayload(kRetryAfterPayloadUrl,
                    absl::Cord(absl::StrCat(absl::ToInt64Milliseconds(after))));
  return status;
}

int HttpCode(const absl::Status& status) {
  auto p = status.GetPayload(kHttpPayloadUrl);
  if (!p.has_value()) return 0;
  std::string s(*p);
  int code = 0;
  (void)absl::SimpleAtoi(s.substr(0, s.find(' ')), &code);
  return code;
}

namespace {

absl::Status Map(long code, const std::string& reason, const std::string& message,
                 const std::vector<std::string>& fields, absl::string_view context) {
  std::string msg = absl::StrCat(context, context.empty() ? "" : ": ", message);
  if (!fields.empty()) absl::StrAppend(&msg, " [fields: ", absl::StrJoin(fields, ", "), "]");
  absl::Status s;
  if (code == 410 || reason == "Expired" || reason == "Gone") {
    s = GoneError(msg);
  } else if (code == 400 || code == 422) {
    s = absl::InvalidArgumentError(msg);
  } else if (code == 401) {
    s = absl::UnauthenticatedError(msg);
  } else if (code == 403) {
    s = absl::PermissionDeniedError(msg);
  } else if (code == 404) {
    s = absl::NotFoundError(msg);
  } else if (code == 409) {
    s = reason == "AlreadyExists" ? absl::AlreadyExistsError(msg) : absl::AbortedError(msg);
  } else if (code == 429 || code >= 500 || code == 0) {
    s = absl::UnavailableError(msg);
  } else {
    s = absl::FailedPreconditionError(msg);
  }
  s.SetPayload(kHttpPayloadUrl, absl::Cord(absl::StrCat(code, " ", reason)));
  return s;
}

void ReadStatus(const nlohmann::json& j, std::string* reason, std::string* message,
                std::vector<std::string>* fields) {
  if (!j.is_object()) return;
  if (j.contains("reason") && j["reason"].is_string()) *reason = j["reason"].get<std::string>();
  if (j.contains("message") && j["message"].is_string()) *message = j["message"].get<std::string>();
  if (j.contains("details") && j["details"].is_object()) {
    const auto& d = j["details"];
    if (d.contains("causes") && d["causes"].is_array()) {
      for (const auto& c : d["causes"]) {
        if (c.is_object() && c.contains("field") && c["field"].is_string()) {
          fields->push_back(c["field"].get<std::string>());
        }
      }
    }
  }
}

}  // namespace

absl::Status StatusFromHttp(long http_code, absl::string_view body, absl::string_view context,
                            std::optional<absl::Duration> retry_after) {
  std::string reason, message;
  std::vector<std::string> fields;
  auto j = nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.value("kind", "") == "Status") {
    ReadStatus(j, &reason, &message, &fields);
  }
  if (message.empty()) {
    std::string text(body.substr(0, 512));
    message = text.empty() ? absl::StrCat("HTTP ", http_code)
                           : absl::StrCat("HTTP ", http_code, ": ", text);
  }
  absl::Status s = Map(http_code, reason, message, fields, context);
  if (retry_after.has_value() && absl::IsUnavailable(s))
    s = WithRetryAfter(std::move(s), *retry_after);
  return s;
}

absl::Status StatusFromStatusObject(const nlohmann::json& status, absl::string_view context) {
  std::string reason, message;
  std::vector<std::string> fields;
  ReadStatus(status, &reason, &message, &fields);
  long code = status.is_object() && status.contains("code") && status["code"].is_number_integer()
                  ? status["code"].get<long>()
                  : 500;
  if (message.empty()) message = status.dump();
  return Map(code, reason, message, fields, context);
}

}  // namespace coach::kubeclient
