#include "operator/history/history_record.h"

#include <google/protobuf/util/json_util.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "operator/reconcile/conditions.h"

namespace coach::history {
namespace {

constexpr size_t kMaxNameLength = 253;

// A name that becomes one key segment or filter value: 1 to kMaxNameLength characters `allowed`
// accepts, not "." or "..". `what` says which characters, for the message.
absl::Status CheckName(const char* field, const std::string& value, bool (*allowed)(char),
                       const char* what) {
  if (value.empty() || value.size() > kMaxNameLength) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must be 1 to ", kMaxNameLength, " characters"));
  }
  for (char c : value) {
    if (!allowed(c)) return absl::InvalidArgumentError(absl::StrCat(field, ": must be ", what));
  }
  if (value == "." || value == "..") {
    return absl::InvalidArgumentError(absl::StrCat(field, ": must not be . or .."));
  }
  return absl::OkStatus();
}

}  // namespace

std::string DeletedBy(const model::Job& job, absl::Time now) {
  const auto& rp = job.spec().run_policy();
  if (rp.has_ttl_seconds_after_finished() && job.status().has_completion_time() &&
      now >= reconcile::FromTimestamp(job.status().completion_time()) +
                 absl::Seconds(rp.ttl_seconds_after_finished())) {
    return "ttl";
  }
  return "deleted";
}

api::v1::JobHistory NewRecord(const model::Job& job, absl::Time now) {
  api::v1::JobHistory record;
  *record.mutable_job() = job;
  *record.mutable_deleted_time() = reconcile::ToTimestamp(now);
  record.set_deleted_by(DeletedBy(job, now));
  return record;
}

absl::StatusOr<std::string> RecordJson(const api::v1::JobHistory& record) {
  const auto& meta = record.job().metadata();
  std::string json;
  auto printed = google::protobuf::util::MessageToJsonString(record, &json);
  if (!printed.ok()) {
    return absl::InternalError(absl::StrCat("record of ", meta.name(), ": ", printed.ToString()));
  }
  if (json.size() > kMaxRecordBytes) {
    return absl::ResourceExhaustedError(absl::StrCat("record of ", meta.namespace_(), "/",
                                                     meta.name(), ": ", json.size(),
                                                     " bytes, more than ", kMaxRecordBytes));
  }
  return json;
}

absl::StatusOr<api::v1::JobHistory> ParseRecordJson(const std::string& where,
                                                    const std::string& json) {
  api::v1::JobHistory record;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;  // a record written by a newer operator
  auto parsed = google::protobuf::util::JsonStringToMessage(json, &record, options);
  if (!parsed.ok()) {
    return absl::DataLossError(absl::StrCat("history record ", where, ": ", parsed.ToString()));
  }
  return record;
}

absl::Status CheckKubeName(const char* field, const std::string& value) {
  return CheckName(
      field, value,
      [](char c) {
        return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-' || c == '.';
      },
      "lowercase letters, digits, '-' or '.'");
}

absl::Status CheckSegment(const char* field, const std::string& value) {
  return CheckName(
      field, value,
      [](char c) { return absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_'; },
      "letters, digits, '-', '.' or '_'");
}

}  // namespace coach::history
