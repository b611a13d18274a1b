// The part of Validate for the history store (--history-*): where each attempt's logs and
// deleted jobs' histories are kept (docs/history.md).

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "operator/cmd/settings.h"
#include "operator/history/history_store.h"

namespace coach::cmd {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

}  // namespace

absl::Status ValidateHistoryFlags(const Flags& flags, Settings* settings) {
  Settings::History& history = settings->history;
  // 1 KiB..1 GiB: a log is held whole in memory while it is read and written.
  if (flags.history_max_log_bytes < 1024 || flags.history_max_log_bytes > (int64_t{1} << 30)) {
    return UsageError(absl::StrCat("--history-max-log-bytes: must be in 1024..1073741824, got ",
                                   flags.history_max_log_bytes));
  }
  history.max_log_bytes = flags.history_max_log_bytes;
  if (!(flags.history_retention_hours >= 1 && flags.history_retention_hours <= 87600)) {
    return UsageError(absl::StrCat("--history-retention-hours: must be in 1..87600, got ",
                                   flags.history_retention_hours));
  }
  history.retention = absl::Hours(flags.history_retention_hours);
  if (flags.history_s3_endpoint.empty()) {
    if (!flags.history_s3_bucket.empty()) {
      return UsageError("--history-s3-bucket: needs --history-s3-endpoint");
    }
    return absl::OkStatus();
  }
  if (flags.history_s3_bucket.empty()) {
    return UsageError("--history-s3-bucket: required with --history-s3-endpoint");
  }
  if (absl::Status s = history::HistoryStore::ValidatePrefix(flags.history_s3_prefix); !s.ok()) {
    return UsageError(absl::StrCat("--history-s3-prefix: ", s.message()));
  }
  coach::s3::S3Options& s3 = history.s3;
  s3.endpoint = flags.history_s3_endpoint;
  s3.bucket = flags.history_s3_bucket;
  s3.region = flags.history_s3_region;
  s3.ca_file = flags.history_s3_ca_file;
  s3.access_key_id = Env("AWS_ACCESS_KEY_ID");
  s3.secret_access_key = Env("AWS_SECRET_ACCESS_KEY");
  if (s3.access_key_id.empty() || s3.secret_access_key.empty()) {
    return UsageError(
        "--history-s3-endpoint: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set (the "
        "history store's credentials)");
  }
  if (absl::Status s = coach::s3::ValidateS3Options(s3); !s.ok()) {
    // "S3Options.bucket: ..." names the field; the flags are what the user wrote.
    std::string message(s.message());
    for (const auto& [field, flag] :
         {std::pair<std::string, std::string>{"S3Options.endpoint", "--history-s3-endpoint"},
          {"S3Options.bucket", "--history-s3-bucket"},
          {"S3Options.region", "--history-s3-region"},
          {"S3Options.ca_file", "--history-s3-ca-file"},
          {"S3Options.access_key_id", "AWS_ACCESS_KEY_ID"},
          {"S3Options.secret_access_key", "AWS_SECRET_ACCESS_KEY"}}) {
      if (message.rfind(field, 0) == 0) message = flag + message.substr(field.size());
    }
    return UsageError(message);
  }
  history.prefix = flags.history_s3_prefix;
  history.store = true;
  return absl::OkStatus();
}

}  // namespace coach::cmd
