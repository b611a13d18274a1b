#include "common/http/transport.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace coach::http {

std::optional<std::string> Response::Header(absl::string_view name) const {
  std::optional<std::string> value;
  for (const auto& [key, v] : headers) {
    if (absl::EqualsIgnoreCase(key, name)) value = std::string(absl::StripAsciiWhitespace(v));
  }
  return value;
}

absl::string_view FailureName(Failure failure) {
  switch (failure) {
    case Failure::kNone:
      return "none";
    case Failure::kCouldNotConnect:
      return "could not connect";
    case Failure::kTimeout:
      return "timeout";
    case Failure::kConnectionBroken:
      return "connection broken";
    case Failure::kTls:
      return "tls";
    case Failure::kBadUrl:
      return "bad url";
    case Failure::kCancelled:
      return "cancelled";
    case Failure::kStoppedBySink:
      return "stopped by sink";
    case Failure::kOther:
      return "other";
  }
  return "unknown";
}

}  // namespace coach::http
