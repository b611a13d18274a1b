#include "operator/history/history_store.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace coach::history {
namespace {

absl::Status CheckJob(const JobRef& job) {
  RETURN_IF_ERROR(CheckKubeName("namespace", job.namespace_));
  RETURN_IF_ERROR(CheckKubeName("name", job.name));
  return CheckSegment("uid", job.uid);
}

absl::Status CheckAttempt(int attempt) {
  if (attempt < 0 || attempt > 1000000) {
    return absl::InvalidArgumentError(absl::StrCat("attempt: must be 0 to 1000000, got ", attempt));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status HistoryStore::ValidatePrefix(const std::string& prefix) {
  if (prefix.empty()) return absl::OkStatus();
  if (!absl::EndsWith(prefix, "/")) {
    return absl::InvalidArgumentError("prefix: must end with '/'");
  }
  if (prefix.size() > 512) return absl::InvalidArgumentError("prefix: at most 512 characters");
  absl::Status valid = s3::ValidatePrefix(prefix);
  if (!valid.ok()) return absl::InvalidArgumentError(absl::StrCat("prefix: ", valid.message()));
  return absl::OkStatus();
}

absl::StatusOr<std::string> HistoryStore::JobLogsPrefix(const JobRef& job) const {
  RETURN_IF_ERROR(CheckJob(job));
  return absl::StrCat(prefix_, "logs/", job.namespace_, "/", job.name, "/", job.uid, "/");
}

absl::StatusOr<std::string> HistoryStore::RecordKey(const JobRef& job) const {
  RETURN_IF_ERROR(CheckJob(job));
  return absl::StrCat(prefix_, "jobs/", job.namespace_, "/", job.name, "/", job.uid, ".json");
}

absl::Status HistoryStore::PutLog(const JobRef& job, int attempt, const std::string& replica,
                                  const std::string& text) {
  RETURN_IF_ERROR(CheckAttempt(attempt));
  RETURN_IF_ERROR(CheckSegment("replica", replica));
  ASSIGN_OR_RETURN(std::string prefix, JobLogsPrefix(job));
  return store_->Put(absl::StrCat(prefix, KeptLogName(attempt, replica), ".log"), text);
}

absl::StatusOr<std::string> HistoryStore::GetLog(const JobRef& job, int attempt,
                                                 const std::string& replica, size_t max_bytes) {
  RETURN_IF_ERROR(CheckAttempt(attempt));
  RETURN_IF_ERROR(CheckSegment("replica", replica));
  ASSIGN_OR_RETURN(std::string prefix, JobLogsPrefix(job));
  return store_->Get(absl::StrCat(prefix, KeptLogName(attempt, replica), ".log"), max_bytes);
}

absl::StatusOr<std::vector<std::string>> HistoryStore::ListLogs(const JobRef& job, int max) {
  ASSIGN_OR_RETURN(std::string prefix, JobLogsPrefix(job));
  ASSIGN_OR_RETURN(s3::ListResult listed, store_->List(prefix, std::max(max, 1)));
  std::vector<std::string> names;
  for (const s3::ObjectInfo& object : listed.objects) {
    absl::string_view name = object.key;
    name.remove_prefix(prefix.size());
    if (!absl::ConsumeSuffix(&name, ".log")) continue;
    names.emplace_back(name);
  }
  return names;
}

absl::StatusOr<std::vector<std::string>> HistoryStore::ReplicasOf(const JobRef& job, int attempt,
                                                                  int max) {
  RETURN_IF_ERROR(CheckAttempt(attempt));
  ASSIGN_OR_RETURN(std::string prefix, JobLogsPrefix(job));
  prefix = absl::StrCat(prefix, "attempt-", attempt, "/");
  ASSIGN_OR_RETURN(s3::ListResult listed, store_->List(prefix, std::max(max, 1)));
  std::vector<std::string> replicas;
  for (const s3::ObjectInfo& object : listed.objects) {
    absl::string_view name = object.key;
    name.remove_prefix(prefix.size());
    if (absl::StrContains(name, '/') || !absl::ConsumeSuffix(&name, ".log")) continue;
    replicas.emplace_back(name);
  }
  return replicas;
}

absl::Status HistoryStore::PutRecord(const api::v1::JobHistory& record) {
  const auto& meta = record.job().metadata();
  ASSIGN_OR_RETURN(std::string key, RecordKey({meta.namespace_(), meta.name(), meta.uid()}));
  ASSIGN_OR_RETURN(std::string json, RecordJson(record));
  return store_->Put(key, json);
}

absl::StatusOr<api::v1::JobHistory> HistoryStore::GetRecord(const JobRef& job) {
  ASSIGN_OR_RETURN(std::string key, RecordKey(job));
  ASSIGN_OR_RETURN(std::string json, store_->Get(key, kMaxRecordBytes));
  return ParseRecordJson(key, json);
}

absl::StatusOr<std::vector<api::v1::JobHistory>> HistoryStore::ListRecords(const std::string& ns,
                                                                           const std::string& name,
                                                                           int max,
                                                                           bool* truncated) {
  std::string prefix = absl::StrCat(prefix_, "jobs/");
  if (!ns.empty()) {
    RETURN_IF_ERROR(CheckKubeName("namespace", ns));
    absl::StrAppend(&prefix, ns, "/");
    if (!name.empty()) {
      RETURN_IF_ERROR(CheckKubeName("name", name));
      absl::StrAppend(&prefix, name, "/");
    }
  } else if (!name.empty()) {
    RETURN_IF_ERROR(CheckKubeName("name", name));
  }
  ASSIGN_OR_RETURN(s3::ListResult listed, store_->List(prefix, kMaxListedRecords));
  std::vector<s3::ObjectInfo> records;
  for (s3::ObjectInfo& object : listed.objects) {
    if (!absl::EndsWith(object.key, ".json")) continue;
    if (!name.empty() && ns.empty()) {
      // jobs/<ns>/<name>/<uid>.json: the name is the second segment.
      std::vector<absl::string_view> parts =
          absl::StrSplit(absl::string_view(object.key).substr(prefix.size()), '/');
      if (parts.size() != 3 || parts[1] != name) continue;
    }
    records.push_back(std::move(object));
  }
  std::stable_sort(records.begin(), records.end(),
                   [](const s3::ObjectInfo& a, const s3::ObjectInfo& b) {
                     return a.last_modified > b.last_modified;
                   });
  *truncated = listed.truncated || static_cast<int>(records.size()) > max;
  if (static_cast<int>(records.size()) > max) records.resize(std::max(max, 0));
  std::vector<api::v1::JobHistory> out;
  for (const s3::ObjectInfo& object : records) {
    absl::StatusOr<std::string> json = store_->Get(object.key, kMaxRecordBytes);
    if (absl::IsNotFound(json.status())) continue;  // swept meanwhile
    if (!json.ok()) return json.status();
    ASSIGN_OR_RETURN(api::v1::JobHistory record, ParseRecordJson(object.key, *json));
    out.push_back(std::move(record));
  }
  return out;
}

absl::StatusOr<int> HistoryStore::Sweep(absl::Time now, absl::Duration retention) {
  const std::string jobs = absl::StrCat(prefix_, "jobs/");
  ASSIGN_OR_RETURN(s3::ListResult listed, store_->List(jobs, kMaxListedRecords));
  int deleted = 0;
  for (const s3::ObjectInfo& object : listed.objects) {
    if (object.last_modified + retention > now) continue;
    absl::string_view rest = absl::string_view(object.key).substr(jobs.size());
    if (!absl::ConsumeSuffix(&rest, ".json")) continue;
    std::vector<std::string> parts = absl::StrSplit(rest, '/');
    if (parts.size() != 3) continue;
    absl::StatusOr<std::string> logs = JobLogsPrefix({parts[0], parts[1], parts[2]});
    if (!logs.ok()) continue;  // not a key this store wrote
    // Logs first: a record whose logs are half gone is swept again next time.
    while (true) {
      ASSIGN_OR_RETURN(s3::ListResult kept, store_->List(*logs, 1000));
      for (const s3::ObjectInfo& log : kept.objects) RETURN_IF_ERROR(store_->Delete(log.key));
      if (!kept.truncated) break;
    }
    RETURN_IF_ERROR(store_->Delete(object.key));
    ++deleted;
  }
  return deleted;
}

}  // namespace coach::history
