#include "operator/backend/local/store/sqlite_job_store.h"

#include <google/protobuf/util/message_differencer.h>

#include <nlohmann/json.hpp>

#include "absl/random/random.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace coach::backend::local {

using store::ListOptions;
using store::ListResult;

namespace {

using api::v1::TrainingJob;

std::string NewUuidV4() {
  static absl::Mutex mu(absl::kConstInit);
  static absl::BitGen* gen = new absl::BitGen();
  uint64_t hi, lo;
  {
    absl::MutexLock lock(&mu);
    hi = absl::Uniform<uint64_t>(*gen);
    lo = absl::Uniform<uint64_t>(*gen);
  }
  hi = (hi & ~0xF000ull) | 0x4000ull;              // version 4
  lo = (lo & ~(0xC0ull << 56)) | (0x80ull << 56);  // variant 10
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", hi >> 32, (hi >> 16) & 0xFFFF, hi & 0xFFFF,
                         lo >> 48, lo & 0xFFFFFFFFFFFFull);
}

std::string PageToken(const JobKey& key) {
  return absl::WebSafeBase64Escape(absl::StrCat(key.namespace_, std::string(1, '\0'), key.name));
}

absl::StatusOr<JobKey> ParsePageToken(const std::string& token) {
  std::string raw;
  size_t zero;
  if (!absl::WebSafeBase64Unescape(token, &raw) || (zero = raw.find('\0')) == std::string::npos ||
      raw.find('\0', zero + 1) != std::string::npos) {
    return absl::InvalidArgumentError("page_token: not a token this store returned");
  }
  return JobKey{raw.substr(0, zero), raw.substr(zero + 1)};
}

absl::StatusOr<int64_t> ParseVersion(const TrainingJob& job) {
  const std::string& rv = job.metadata().resource_version();
  int64_t v = 0;
  if (rv.empty() || !absl::SimpleAtoi(rv, &v)) {
    return absl::InvalidArgumentError(
        "metadata.resourceVersion: required for updates (read the job first)");
  }
  return v;
}

absl::Status Conflict(const JobKey& key, const std::string& given, int64_t stored) {
  return absl::AbortedError(absl::StrCat("job ", key.namespace_, "/", key.name,
                                         " was modified: resourceVersion ", given,
                                         " is stale (now ", stored, "); re-read and retry"));
}

absl::Status NoJob(const JobKey& key) {
  return absl::NotFoundError(absl::StrCat("job ", key.namespace_, "/", key.name, " not found"));
}

bool MatchesLabels(const TrainingJob& job, const std::map<std::string, std::string>& sel) {
  const auto& labels = job.metadata().labels();
  for (const auto& [k, v] : sel) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteJobStore>> SqliteJobStore::Open(const std::string& state_dir,
                                                                     Options options) {
  SqliteDatabase::Options db_options;
  db_options.busy_timeout = options.busy_timeout;
  db_options.clock = options.clock;
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDatabase> database,
                   SqliteDatabase::Open(state_dir, db_options));
  return std::make_unique<SqliteJobStore>(std::move(database), std::move(options));
}

SqliteJobStore::SqliteJobStore(std::shared_ptr<SqliteDatabase> database, Options options)
    : db_(std::move(database)),
      options_(std::move(options)),
      replicas_(std::make_unique<SqliteReplicaStore>(db_)) {}

absl::Status SqliteJobStore::WriteJobLocked(const TrainingJob& job, bool insert) {
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [k, v] : job.metadata().labels()) labels[k] = v;
  std::string blob;
  if (!job.SerializeToString(&blob)) return absl::InternalError("cannot serialize job");
  int64_t rv = 0;
  (void)absl::SimpleAtoi(job.metadata().resource_version(), &rv);
  absl::Time created = absl::FromUnixSeconds(job.metadata().creation_timestamp().seconds()) +
                       absl::Nanoseconds(job.metadata().creation_timestamp().nanos());
  ASSIGN_OR_RETURN(SqliteStatement s,
                   db_->Statement(insert ? "INSERT INTO jobs (uid, kind, resource_version, "
                                           "generation, created_us, labels_json, job, "
                                           "namespace, name) VALUES (?,?,?,?,?,?,?,?,?)"
                                         : "UPDATE jobs SET uid=?, kind=?, resource_version=?, "
                                           "generation=?, created_us=?, labels_json=?, job=? "
                                           "WHERE namespace=? AND name=?"));
  s.Bind(1, job.metadata().uid())
      .Bind(2, int64_t{job.kind()})
      .Bind(3, rv)
      .Bind(4, job.metadata().generation())
      .Bind(5, absl::ToUnixMicros(created))
      .Bind(6, labels.dump())
      .BindBlob(7, blob)
      .Bind(8, job.metadata().namespace_())
      .Bind(9, job.metadata().name());
  absl::Status st = s.Run();
  if (absl::IsAlreadyExists(st)) {
    return absl::AlreadyExistsError(absl::StrCat("job ", job.metadata().namespace_(), "/",
                                                 job.metadata().name(), " already exists"));
  }
  return st;
}

absl::StatusOr<TrainingJob> SqliteJobStore::Create(const TrainingJob& input) {
  if (input.metadata().name().empty() || input.metadata().namespace_().empty()) {
    return absl::InvalidArgumentError("metadata.name and metadata.namespace are required");
  }
  TrainingJob job = input;
  job.mutable_metadata()->set_uid(NewUuidV4());
  job.mutable_metadata()->set_resource_version("1");
  job.mutable_metadata()->set_generation(1);
  absl::Time now = Now();
  auto* ts = job.mutable_metadata()->mutable_creation_timestamp();
  ts->set_seconds(absl::ToUnixSeconds(now));
  ts->set_nanos(static_cast<int32_t>((now - absl::FromUnixSeconds(absl::ToUnixSeconds(now))) /
                                     absl::Nanoseconds(1)));
  absl::MutexLock lock(&db_->mu());
  RETURN_IF_ERROR(
      db_->InTransaction(Commit::kSynced, [&] { return WriteJobLocked(job, /*insert=*/true); }));
  return job;
}

absl::StatusOr<TrainingJob> SqliteJobStore::GetLocked(const JobKey& key) {
  ASSIGN_OR_RETURN(SqliteStatement q,
                   db_->Statement("SELECT job FROM jobs WHERE namespace=? AND name=?"));
  q.Bind(1, key.namespace_).Bind(2, key.name);
  ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return NoJob(key);
  TrainingJob job;
  if (!job.ParseFromString(q.Text(0))) {
    return absl::DataLossError(absl::StrCat("job ", key.namespace_, "/", key.name, " is corrupt"));
  }
  return job;
}

absl::StatusOr<TrainingJob> SqliteJobStore::Get(const JobKey& key) {
  absl::MutexLock lock(&db_->mu());
  return GetLocked(key);
}

absl::StatusOr<ListResult> SqliteJobStore::List(const ListOptions& options) {
  if (options.page_size < 0) return absl::InvalidArgumentError("page_size: must be >= 0");
  JobKey after;
  bool has_after = !options.page_token.empty();
  if (has_after) {
    ASSIGN_OR_RETURN(after, ParsePageToken(options.page_token));
  }
  std::string sql = "SELECT job, namespace, name FROM jobs WHERE 1";
  if (!options.namespace_.empty()) sql += " AND namespace = ?1";
  if (has_after) sql += " AND (namespace, name) > (?2, ?3)";
  sql += " ORDER BY namespace, name";
  absl::MutexLock lock(&db_->mu());
  ListResult result;
  // A read transaction: the page is one consistent snapshot.
  RETURN_IF_ERROR(db_->InReadTransaction([&]() -> absl::Status {
    ASSIGN_OR_RETURN(SqliteStatement q, db_->Statement(sql));
    if (!options.namespace_.empty()) q.Bind(1, options.namespace_);
    if (has_after) q.Bind(2, after.namespace_).Bind(3, after.name);
    while (true) {
      ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) return absl::OkStatus();
      TrainingJob job;
      if (!job.ParseFromString(q.Text(0))) {
        return absl::DataLossError(absl::StrCat("job ", q.Text(1), "/", q.Text(2), " is corrupt"));
      }
      if (!MatchesLabels(job, options.label_selector)) continue;
      if (options.page_size > 0 && static_cast<int>(result.jobs.size()) == options.page_size) {
        // Another match exists beyond this page.
        result.next_page_token = PageToken(store::KeyOf(result.jobs.back()));
        return absl::OkStatus();
      }
      result.jobs.push_back(std::move(job));
    }
  }));
  return result;
}

absl::StatusOr<TrainingJob> SqliteJobStore::Update(const TrainingJob& input) {
  ASSIGN_OR_RETURN(int64_t given, ParseVersion(input));
  JobKey key = store::KeyOf(input);
  TrainingJob result;
  absl::MutexLock lock(&db_->mu());
  RETURN_IF_ERROR(db_->InTransaction(Commit::kSynced, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(TrainingJob stored, GetLocked(key));
    int64_t current = 0;
    (void)absl::SimpleAtoi(stored.metadata().resource_version(), &current);
    if (current != given) return Conflict(key, input.metadata().resource_version(), current);
    result = input;
    *result.mutable_status() = stored.status();
    auto* md = result.mutable_metadata();
    md->set_uid(stored.metadata().uid());
    *md->mutable_creation_timestamp() = stored.metadata().creation_timestamp();
    md->set_resource_version(absl::StrCat(current + 1));
    bool spec_changed =
        !google::protobuf::util::MessageDifferencer::Equals(stored.spec(), input.spec()) ||
        stored.kind() != input.kind();
    md->set_generation(stored.metadata().generation() + (spec_changed ? 1 : 0));
    return WriteJobLocked(result, /*insert=*/false);
  }));
  return result;
}

absl::StatusOr<TrainingJob> SqliteJobStore::UpdateStatus(const TrainingJob& input) {
  ASSIGN_OR_RETURN(int64_t given, ParseVersion(input));
  JobKey key = store::KeyOf(input);
  TrainingJob result;
  absl::MutexLock lock(&db_->mu());
  RETURN_IF_ERROR(db_->InTransaction(Commit::kBuffered, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(result, GetLocked(key));
    int64_t current = 0;
    (void)absl::SimpleAtoi(result.metadata().resource_version(), &current);
    if (current != given) return Conflict(key, input.metadata().resource_version(), current);
    *result.mutable_status() = input.status();
    result.mutable_metadata()->set_resource_version(absl::StrCat(current + 1));
    return WriteJobLocked(result, /*insert=*/false);
  }));
  return result;
}

absl::Status SqliteJobStore::Delete(const JobKey& key,
                                    std::optional<std::string> resource_version) {
  absl::MutexLock lock(&db_->mu());
  return db_->InTransaction(Commit::kSynced, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(TrainingJob stored, GetLocked(key));
    if (resource_version.has_value() && *resource_version != stored.metadata().resource_version()) {
      int64_t current = 0;
      (void)absl::SimpleAtoi(stored.metadata().resource_version(), &current);
      return Conflict(key, *resource_version, current);
    }
    ASSIGN_OR_RETURN(SqliteStatement d,
                     db_->Statement("DELETE FROM jobs WHERE namespace=? AND name=?"));
    d.Bind(1, key.namespace_).Bind(2, key.name);
    return d.Run();
  });
}

absl::Status SqliteJobStore::AppendEvent(const JobKey& job, const JobEvent& e) {
  return AppendEvents(job, {e});
}

absl::Status SqliteJobStore::AppendEvents(const JobKey& job, const std::vector<JobEvent>& events) {
  if (events.empty()) return absl::OkStatus();
  absl::MutexLock lock(&db_->mu());
  return db_->InTransaction(Commit::kBuffered, [&]() -> absl::Status {
    RETURN_IF_ERROR(db_->JobExists(job));
    for (const JobEvent& e : events) {
      ASSIGN_OR_RETURN(SqliteStatement ins,
                       db_->Statement("INSERT INTO events (namespace, job_name, "
                                      "type, reason, message, time_us) "
                                      "VALUES (?,?,?,?,?,?)"));
      ins.Bind(1, job.namespace_)
          .Bind(2, job.name)
          .Bind(3, e.type)
          .Bind(4, e.reason)
          .Bind(5, e.message)
          .BindTime(6, e.time);
      RETURN_IF_ERROR(ins.Run());
    }
    ASSIGN_OR_RETURN(SqliteStatement trim,
                     db_->Statement("DELETE FROM events WHERE namespace=?1 AND "
                                    "job_name=?2 AND id NOT IN (SELECT id FROM events "
                                    "WHERE namespace=?1 AND job_name=?2 ORDER BY id "
                                    "DESC LIMIT ?3)"));
    trim.Bind(1, job.namespace_).Bind(2, job.name).Bind(3, int64_t{options_.max_events_per_job});
    return trim.Run();
  });
}

absl::StatusOr<std::vector<JobEvent>> SqliteJobStore::ListEvents(const JobKey& job) {
  absl::MutexLock lock(&db_->mu());
  ASSIGN_OR_RETURN(SqliteStatement q, db_->Statement("SELECT type, reason, message, time_us FROM "
                                                     "events WHERE namespace=? AND job_name=? "
                                                     "ORDER BY id"));
  q.Bind(1, job.namespace_).Bind(2, job.name);
  std::vector<JobEvent> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return out;
    out.push_back(JobEvent{q.Text(0), q.Text(1), q.Text(2), q.Time(3)});
  }
}

}  // namespace coach::backend::local
