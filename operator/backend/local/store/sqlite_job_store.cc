#include "operator/backend/local/store/sqlite_job_store.h"

#include <dirent.h>
#include <google/protobuf/util/message_differencer.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/random/random.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "operator/backend/local/fs_util.h"

namespace coach::backend::local {

using store::ListOptions;
using store::ListResult;

namespace {

using api::v1::TrainingJob;

// Migration N (1-based) brings the schema from version N-1 to N. Never edit a shipped
// entry: append a new one.
const char* const kMigrations[] = {
    // 1: initial schema.
    R"sql(
CREATE TABLE jobs (
  namespace TEXT NOT NULL,
  name TEXT NOT NULL,
  uid TEXT NOT NULL UNIQUE,
  kind INTEGER NOT NULL,
  resource_version INTEGER NOT NULL,
  generation INTEGER NOT NULL,
  created_us INTEGER NOT NULL,
  labels_json TEXT NOT NULL,
  job BLOB NOT NULL,
  PRIMARY KEY (namespace, name)
) WITHOUT ROWID;
CREATE TABLE replicas (
  namespace TEXT NOT NULL,
  job_name TEXT NOT NULL,
  name TEXT NOT NULL,
  replica_type TEXT NOT NULL,
  idx INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  pgid INTEGER NOT NULL,
  start_time INTEGER NOT NULL,
  replica_dir TEXT NOT NULL,
  log_path TEXT NOT NULL,
  phase INTEGER NOT NULL,
  exit_code INTEGER,
  restart_count INTEGER NOT NULL,
  ports_json TEXT NOT NULL,
  gpus_json TEXT NOT NULL,
  started_us INTEGER,
  finished_us INTEGER,
  message TEXT NOT NULL,
  PRIMARY KEY (namespace, job_name, name),
  FOREIGN KEY (namespace, job_name) REFERENCES jobs (namespace, name) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  namespace TEXT NOT NULL,
  job_name TEXT NOT NULL,
  type TEXT NOT NULL,
  reason TEXT NOT NULL,
  message TEXT NOT NULL,
  time_us INTEGER,
  FOREIGN KEY (namespace, job_name) REFERENCES jobs (namespace, name) ON DELETE CASCADE
);
CREATE INDEX events_by_job ON events (namespace, job_name, id);
CREATE TABLE ports (
  port INTEGER PRIMARY KEY,
  namespace TEXT NOT NULL,
  job_name TEXT NOT NULL,
  replica TEXT NOT NULL,
  port_name TEXT NOT NULL,
  FOREIGN KEY (namespace, job_name) REFERENCES jobs (namespace, name) ON DELETE CASCADE
);
CREATE INDEX ports_by_job ON ports (namespace, job_name);
)sql",
    // 2: the poller lists running replicas only, whatever the store holds.
    R"sql(
CREATE INDEX replicas_by_phase ON replicas (phase);
)sql",
    // 3: a job's recorded non-pod objects (object_table.h), which were a file per job: a
    // file costs an inode allocation, the dearest file-system call of a start on ext4.
    R"sql(
CREATE TABLE objects (
  namespace TEXT NOT NULL,
  job_name TEXT NOT NULL,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  PRIMARY KEY (namespace, job_name, kind, name),
  FOREIGN KEY (namespace, job_name) REFERENCES jobs (namespace, name) ON DELETE CASCADE
) WITHOUT ROWID;
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == SqliteJobStore::kSchemaVersion,
              "one migration per schema version");

absl::Status SqliteError(sqlite3* db, int rc, const std::string& what) {
  std::string msg = absl::StrCat(what, ": ", sqlite3_errstr(rc), " (", sqlite3_errmsg(db), ")");
  int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return absl::UnavailableError(msg);
  return absl::InternalError(msg);
}

// A prepared statement: a one-off one is finalized on destruction, one borrowed from the
// store's cache (Cached) is reset for its next use instead.
class Stmt {
 public:
  static absl::StatusOr<Stmt> Prepare(sqlite3* db, const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr);
    if (rc != SQLITE_OK) return SqliteError(db, rc, "prepare");
    return Stmt(db, s, /*owned=*/true);
  }
  // The cache's statement for `sql`, prepared on first use. Parsing and planning the SQL
  // was a quarter of the operator's CPU when every call prepared its statements afresh.
  // The caller holds the store's mutex, and no two live Stmt borrow the same statement.
  static absl::StatusOr<Stmt> Cached(sqlite3* db, SqliteJobStore::StatementCache& cache,
                                     const std::string& sql) {
    sqlite3_stmt*& s = cache[sql];
    if (s == nullptr) {
      int rc = sqlite3_prepare_v3(db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr);
      if (rc != SQLITE_OK) {
        cache.erase(sql);
        return SqliteError(db, rc, "prepare");
      }
    }
    return Stmt(db, s, /*owned=*/false);
  }
  Stmt(Stmt&& o) noexcept : db_(o.db_), s_(o.s_), owned_(o.owned_) { o.s_ = nullptr; }
  Stmt(const Stmt&) = delete;
  ~Stmt() {
    if (s_ == nullptr) return;
    if (owned_) {
      sqlite3_finalize(s_);
    } else {
      sqlite3_reset(s_);
      sqlite3_clear_bindings(s_);
    }
  }

  Stmt& Bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& BindBlob(int i, const std::string& v) {
    sqlite3_bind_blob(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& BindTime(int i, absl::Time t) {
    if (t == absl::InfinitePast()) {
      sqlite3_bind_null(s_, i);
    } else {
      sqlite3_bind_int64(s_, i, absl::ToUnixMicros(t));
    }
    return *this;
  }
  // True when a row is available, false when done.
  absl::StatusOr<bool> Step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    if ((rc & 0xff) == SQLITE_CONSTRAINT) {
      return absl::AlreadyExistsError(sqlite3_errmsg(db_));
    }
    return SqliteError(db_, rc, "step");
  }
  absl::Status Run() {
    ASSIGN_OR_RETURN(bool row, Step());
    (void)row;
    return absl::OkStatus();
  }
  int64_t Int(int c) const { return sqlite3_column_int64(s_, c); }
  bool IsNull(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  std::string Text(int c) const {
    const void* p = sqlite3_column_blob(s_, c);
    int n = sqlite3_column_bytes(s_, c);
    return p == nullptr ? std::string() : std::string(static_cast<const char*>(p), n);
  }
  absl::Time Time(int c) const {
    return IsNull(c) ? absl::InfinitePast() : absl::FromUnixMicros(Int(c));
  }

 private:
  Stmt(sqlite3* db, sqlite3_stmt* s, bool owned) : db_(db), s_(s), owned_(owned) {}
  sqlite3* db_;
  sqlite3_stmt* s_;
  bool owned_;
};

absl::Status Exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err != nullptr ? err : "";
    sqlite3_free(err);
    return SqliteError(db, rc, absl::StrCat("exec (", msg, ")"));
  }
  return absl::OkStatus();
}

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

const char kReplicaColumns[] =
    "namespace, job_name, name, replica_type, idx, pid, pgid, start_time, replica_dir, "
    "log_path, phase, exit_code, restart_count, ports_json, gpus_json, started_us, "
    "finished_us, message";

absl::StatusOr<ReplicaRecord> ReadReplica(const Stmt& s) {
  ReplicaRecord r;
  r.job = {s.Text(0), s.Text(1)};
  r.name = s.Text(2);
  r.replica_type = s.Text(3);
  r.index = static_cast<int>(s.Int(4));
  r.process.pid = static_cast<pid_t>(s.Int(5));
  r.process.pgid = static_cast<pid_t>(s.Int(6));
  r.process.start_time = static_cast<uint64_t>(s.Int(7));
  r.process.replica_files = s.Text(8);
  r.log_path = s.Text(9);
  r.phase = static_cast<model::PodPhase>(s.Int(10));
  if (!s.IsNull(11)) r.exit_code = static_cast<int>(s.Int(11));
  r.restart_count = static_cast<int>(s.Int(12));
  nlohmann::json ports = nlohmann::json::parse(s.Text(13), nullptr, false);
  nlohmann::json gpus = nlohmann::json::parse(s.Text(14), nullptr, false);
  if (!ports.is_object() || !gpus.is_array()) {
    return absl::DataLossError(absl::StrCat("replica ", r.name, ": corrupt ports/gpus"));
  }
  for (auto& [k, v] : ports.items()) r.ports[k] = v.get<int>();
  for (auto& g : gpus) r.gpus.push_back(g.get<int>());
  r.started_at = s.Time(15);
  r.finished_at = s.Time(16);
  r.message = s.Text(17);
  return r;
}

// Every row of a query selecting port, namespace, job_name, replica, port_name.
absl::StatusOr<std::vector<PortReservation>> PortRows(Stmt& q) {
  std::vector<PortReservation> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return out;
    out.push_back(
        PortReservation{static_cast<int>(q.Int(0)), {q.Text(1), q.Text(2)}, q.Text(3), q.Text(4)});
  }
}

}  // namespace

SqliteJobStore::SqliteJobStore(sqlite3* db, Options options)
    : db_(db), options_(std::move(options)) {}

SqliteJobStore::~SqliteJobStore() {
  absl::MutexLock lock(&mu_);
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

namespace {

// True when `dir` exists and holds at least one entry.
bool HasEntries(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
}

}  // namespace

absl::Status RefuseLostDatabase(const std::string& state_dir, const std::string& path) {
  absl::StatusOr<int64_t> size = FileSize(path);
  if (size.ok() && *size > 0) return absl::OkStatus();
  if (!size.ok() && !absl::IsNotFound(size.status())) return size.status();
  absl::StatusOr<int64_t> wal = FileSize(path + "-wal");
  if (HasEntries(state_dir + "/replicas") || (wal.ok() && *wal > 0)) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " is ", size.ok() ? "empty" : "missing", " but ", state_dir,
        " holds replicas of an earlier run: refusing to start with an empty store, which would "
        "orphan them and lose every job (restore the database, or move ",
        state_dir, " away to start afresh)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SqliteJobStore>> SqliteJobStore::Open(const std::string& state_dir,
                                                                     Options options) {
  RETURN_IF_ERROR(MakeDirs(state_dir));
  // Jobs' env (secrets), logs and processes live here: the operator's user's alone.
  if (::chmod(state_dir.c_str(), 0700) != 0) {
    return absl::InternalError(absl::StrCat("chmod 0700 ", state_dir, ": ", std::strerror(errno)));
  }
  const std::string path = state_dir + "/coach.db";
  RETURN_IF_ERROR(RefuseLostDatabase(state_dir, path));
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status s = absl::InternalError(
        absl::StrCat("open ", path, ": ", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
    sqlite3_close_v2(db);
    return s;
  }
  std::unique_ptr<SqliteJobStore> store(new SqliteJobStore(db, std::move(options)));
  absl::MutexLock lock(&store->mu_);
  sqlite3_busy_timeout(db,
                       static_cast<int>(absl::ToInt64Milliseconds(store->options_.busy_timeout)));
  {
    ASSIGN_OR_RETURN(Stmt wal, Stmt::Prepare(db, "PRAGMA journal_mode=WAL"));
    ASSIGN_OR_RETURN(bool row, wal.Step());
    if (!row || wal.Text(0) != "wal") {
      return absl::FailedPreconditionError(absl::StrCat(path, ": cannot enable WAL"));
    }
  }
  RETURN_IF_ERROR(Exec(db, "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"));
  RETURN_IF_ERROR(store->Migrate());
  return store;
}

absl::Status SqliteJobStore::Run(const char* sql) {
  ASSIGN_OR_RETURN(Stmt s, Stmt::Cached(db_, statements_, sql));
  return s.Run();
}

absl::Status SqliteJobStore::InTransaction(Commit commit,
                                           const std::function<absl::Status()>& body) {
  // Changed only between transactions, where sqlite allows it. In WAL mode a commit
  // appends to the log either way; kSynced also fdatasyncs the log, which makes every
  // earlier commit durable too (the log is replayed as a prefix).
  if (commit != commit_mode_) {
    RETURN_IF_ERROR(
        Run(commit == Commit::kSynced ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"));
    commit_mode_ = commit;
  }
  RETURN_IF_ERROR(Run("BEGIN IMMEDIATE"));
  absl::Status s = body();
  if (s.ok()) s = Run("COMMIT");
  if (!s.ok()) (void)Exec(db_, "ROLLBACK");
  return s;
}

absl::Status SqliteJobStore::Migrate() {
  RETURN_IF_ERROR(Exec(db_,
                       "CREATE TABLE IF NOT EXISTS schema_migrations ("
                       "version INTEGER PRIMARY KEY, applied_us INTEGER NOT NULL)"));
  for (int version = 1; version <= kSchemaVersion; ++version) {
    RETURN_IF_ERROR(InTransaction(Commit::kSynced, [&]() -> absl::Status {
      // Checked inside the write transaction: two processes opening a new database at
      // once must not both apply a migration.
      ASSIGN_OR_RETURN(Stmt q, Stmt::Prepare(db_, "SELECT MAX(version) FROM schema_migrations"));
      ASSIGN_OR_RETURN(bool row, q.Step());
      int64_t current = row && !q.IsNull(0) ? q.Int(0) : 0;
      if (current > kSchemaVersion) {
        return absl::FailedPreconditionError(
            absl::StrCat("coach.db has schema version ", current, "; this coach knows up to ",
                         kSchemaVersion, " (written by a newer coach?)"));
      }
      if (current >= version) return absl::OkStatus();
      RETURN_IF_ERROR(Exec(db_, kMigrations[version - 1]));
      ASSIGN_OR_RETURN(Stmt ins, Stmt::Prepare(db_, "INSERT INTO schema_migrations VALUES (?, ?)"));
      ins.Bind(1, int64_t{version}).Bind(2, absl::ToUnixMicros(Now()));
      return ins.Run();
    }));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> SqliteJobStore::SchemaVersion() {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Stmt q,
                   Stmt::Cached(db_, statements_, "SELECT MAX(version) FROM schema_migrations"));
  ASSIGN_OR_RETURN(bool row, q.Step());
  return row && !q.IsNull(0) ? static_cast<int>(q.Int(0)) : 0;
}

absl::Status SqliteJobStore::WriteJobLocked(const TrainingJob& job, bool insert) {
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [k, v] : job.metadata().labels()) labels[k] = v;
  std::string blob;
  if (!job.SerializeToString(&blob)) return absl::InternalError("cannot serialize job");
  int64_t rv = 0;
  (void)absl::SimpleAtoi(job.metadata().resource_version(), &rv);
  absl::Time created = absl::FromUnixSeconds(job.metadata().creation_timestamp().seconds()) +
                       absl::Nanoseconds(job.metadata().creation_timestamp().nanos());
  ASSIGN_OR_RETURN(Stmt s,
                   Stmt::Cached(db_, statements_,
                                insert ? "INSERT INTO jobs (uid, kind, resource_version, "
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
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(
      InTransaction(Commit::kSynced, [&] { return WriteJobLocked(job, /*insert=*/true); }));
  return job;
}

absl::StatusOr<TrainingJob> SqliteJobStore::GetLocked(const JobKey& key) {
  ASSIGN_OR_RETURN(
      Stmt q, Stmt::Cached(db_, statements_, "SELECT job FROM jobs WHERE namespace=? AND name=?"));
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
  absl::MutexLock lock(&mu_);
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
  absl::MutexLock lock(&mu_);
  ListResult result;
  // A read transaction: the page is one consistent snapshot.
  RETURN_IF_ERROR(Run("BEGIN"));
  absl::Status s = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(Stmt q, Stmt::Cached(db_, statements_, sql));
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
  }();
  (void)Run("COMMIT");
  RETURN_IF_ERROR(s);
  return result;
}

absl::StatusOr<TrainingJob> SqliteJobStore::Update(const TrainingJob& input) {
  ASSIGN_OR_RETURN(int64_t given, ParseVersion(input));
  JobKey key = store::KeyOf(input);
  TrainingJob result;
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(InTransaction(Commit::kSynced, [&]() -> absl::Status {
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
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(InTransaction(Commit::kBuffered, [&]() -> absl::Status {
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
  absl::MutexLock lock(&mu_);
  return InTransaction(Commit::kSynced, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(TrainingJob stored, GetLocked(key));
    if (resource_version.has_value() && *resource_version != stored.metadata().resource_version()) {
      int64_t current = 0;
      (void)absl::SimpleAtoi(stored.metadata().resource_version(), &current);
      return Conflict(key, *resource_version, current);
    }
    ASSIGN_OR_RETURN(
        Stmt d, Stmt::Cached(db_, statements_, "DELETE FROM jobs WHERE namespace=? AND name=?"));
    d.Bind(1, key.namespace_).Bind(2, key.name);
    return d.Run();
  });
}

absl::Status SqliteJobStore::JobExistsLocked(const JobKey& key) {
  ASSIGN_OR_RETURN(
      Stmt q, Stmt::Cached(db_, statements_, "SELECT 1 FROM jobs WHERE namespace=? AND name=?"));
  q.Bind(1, key.namespace_).Bind(2, key.name);
  ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? absl::OkStatus() : NoJob(key);
}

absl::Status SqliteJobStore::PutReplica(const ReplicaRecord& r) {
  // A record without a process is the intent written before the process starts: synced,
  // so that no crash, power cuts included, leaves a replica this store does not know of
  // (and would start again). What follows (the handle, the exit) is re-read from the
  // shim's process and exit files when a power cut loses it.
  const Commit commit = r.process.pid == 0 ? Commit::kSynced : Commit::kBuffered;
  absl::MutexLock lock(&mu_);
  return InTransaction(commit, [&] { return PutReplicaLocked(r); });
}

absl::Status SqliteJobStore::PutReplicas(const std::vector<ReplicaRecord>& replicas) {
  if (replicas.empty()) return absl::OkStatus();
  Commit commit = Commit::kBuffered;
  for (const ReplicaRecord& r : replicas) {
    if (r.process.pid == 0) commit = Commit::kSynced;  // as PutReplica
  }
  absl::MutexLock lock(&mu_);
  return InTransaction(commit, [&]() -> absl::Status {
    for (const ReplicaRecord& r : replicas) RETURN_IF_ERROR(PutReplicaLocked(r));
    return absl::OkStatus();
  });
}

absl::Status SqliteJobStore::PutReplicaLocked(const ReplicaRecord& r) {
  nlohmann::json ports = nlohmann::json::object();
  for (const auto& [k, v] : r.ports) ports[k] = v;
  nlohmann::json gpus = r.gpus;
  RETURN_IF_ERROR(JobExistsLocked(r.job));
  ASSIGN_OR_RETURN(Stmt s,
                   Stmt::Cached(db_, statements_,
                                absl::StrCat("INSERT OR REPLACE INTO replicas (", kReplicaColumns,
                                             ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")));
  s.Bind(1, r.job.namespace_)
      .Bind(2, r.job.name)
      .Bind(3, r.name)
      .Bind(4, r.replica_type)
      .Bind(5, int64_t{r.index})
      .Bind(6, int64_t{r.process.pid})
      .Bind(7, int64_t{r.process.pgid})
      .Bind(8, static_cast<int64_t>(r.process.start_time))
      .Bind(9, r.process.replica_files)
      .Bind(10, r.log_path)
      .Bind(11, static_cast<int64_t>(r.phase))
      .Bind(13, int64_t{r.restart_count})
      .Bind(14, ports.dump())
      .Bind(15, gpus.dump())
      .BindTime(16, r.started_at)
      .BindTime(17, r.finished_at)
      .Bind(18, r.message);
  if (r.exit_code.has_value()) s.Bind(12, int64_t{*r.exit_code});
  return s.Run();
}

absl::StatusOr<std::vector<ReplicaRecord>> SqliteJobStore::QueryReplicas(const JobKey* job,
                                                                         bool running_only) {
  absl::MutexLock lock(&mu_);
  std::string sql = absl::StrCat("SELECT ", kReplicaColumns, " FROM replicas");
  if (job != nullptr) sql += " WHERE namespace=? AND job_name=?";
  // By the index on phase: the poller's look costs what runs, not what the store holds.
  if (running_only) sql += " WHERE phase=?";
  sql += " ORDER BY namespace, job_name, name";
  ASSIGN_OR_RETURN(Stmt q, Stmt::Cached(db_, statements_, sql));
  if (job != nullptr) q.Bind(1, job->namespace_).Bind(2, job->name);
  if (running_only) q.Bind(1, static_cast<int64_t>(model::PodPhase::kRunning));
  std::vector<ReplicaRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return out;
    ASSIGN_OR_RETURN(ReplicaRecord r, ReadReplica(q));
    out.push_back(std::move(r));
  }
}

absl::StatusOr<std::vector<ReplicaRecord>> SqliteJobStore::ListReplicas(const JobKey& job) {
  return QueryReplicas(&job, /*running_only=*/false);
}

absl::StatusOr<std::vector<ReplicaRecord>> SqliteJobStore::ListAllReplicas() {
  return QueryReplicas(nullptr, /*running_only=*/false);
}

absl::StatusOr<std::vector<ReplicaRecord>> SqliteJobStore::ListRunningReplicas() {
  return QueryReplicas(nullptr, /*running_only=*/true);
}

absl::Status SqliteJobStore::DeleteReplica(const JobKey& job, const std::string& name) {
  absl::MutexLock lock(&mu_);
  return InTransaction(Commit::kBuffered, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(Stmt d, Stmt::Cached(db_, statements_,
                                          "DELETE FROM replicas WHERE namespace=? AND "
                                          "job_name=? AND name=?"));
    d.Bind(1, job.namespace_).Bind(2, job.name).Bind(3, name);
    RETURN_IF_ERROR(d.Run());
    if (sqlite3_changes(db_) == 0) {
      return absl::NotFoundError(absl::StrCat("replica ", job.namespace_, "/", name, " not found"));
    }
    return absl::OkStatus();
  });
}

absl::Status SqliteJobStore::AppendEvent(const JobKey& job, const JobEvent& e) {
  return AppendEvents(job, {e});
}

absl::Status SqliteJobStore::AppendEvents(const JobKey& job, const std::vector<JobEvent>& events) {
  if (events.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  return InTransaction(Commit::kBuffered, [&]() -> absl::Status {
    RETURN_IF_ERROR(JobExistsLocked(job));
    for (const JobEvent& e : events) {
      ASSIGN_OR_RETURN(Stmt ins, Stmt::Cached(db_, statements_,
                                              "INSERT INTO events (namespace, job_name, "
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
    ASSIGN_OR_RETURN(Stmt trim, Stmt::Cached(db_, statements_,
                                             "DELETE FROM events WHERE namespace=?1 AND "
                                             "job_name=?2 AND id NOT IN (SELECT id FROM events "
                                             "WHERE namespace=?1 AND job_name=?2 ORDER BY id "
                                             "DESC LIMIT ?3)"));
    trim.Bind(1, job.namespace_).Bind(2, job.name).Bind(3, int64_t{options_.max_events_per_job});
    return trim.Run();
  });
}

absl::StatusOr<std::vector<JobEvent>> SqliteJobStore::ListEvents(const JobKey& job) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Stmt q, Stmt::Cached(db_, statements_,
                                        "SELECT type, reason, message, time_us FROM "
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

absl::Status SqliteJobStore::ReservePorts(const std::vector<PortReservation>& ports) {
  absl::MutexLock lock(&mu_);
  return InTransaction(Commit::kBuffered, [&]() -> absl::Status {
    for (const PortReservation& p : ports) {
      RETURN_IF_ERROR(JobExistsLocked(p.job));
      ASSIGN_OR_RETURN(Stmt ins, Stmt::Cached(db_, statements_,
                                              "INSERT INTO ports (port, namespace, "
                                              "job_name, replica, port_name) "
                                              "VALUES (?,?,?,?,?)"));
      ins.Bind(1, int64_t{p.port})
          .Bind(2, p.job.namespace_)
          .Bind(3, p.job.name)
          .Bind(4, p.replica)
          .Bind(5, p.port_name);
      absl::Status s = ins.Run();
      if (absl::IsAlreadyExists(s)) {
        return absl::AlreadyExistsError(absl::StrCat("port ", p.port, " is already reserved"));
      }
      RETURN_IF_ERROR(s);
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<PortReservation>> SqliteJobStore::ListPortReservations() {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Stmt q, Stmt::Cached(db_, statements_,
                                        "SELECT port, namespace, job_name, replica, "
                                        "port_name FROM ports ORDER BY port"));
  return PortRows(q);
}

absl::StatusOr<std::vector<PortReservation>> SqliteJobStore::ListPortReservationsOf(
    const JobKey& job) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Stmt q, Stmt::Cached(db_, statements_,
                                        "SELECT port, namespace, job_name, replica, port_name "
                                        "FROM ports WHERE namespace=? AND job_name=? "
                                        "ORDER BY port"));
  q.Bind(1, job.namespace_).Bind(2, job.name);
  return PortRows(q);
}

absl::StatusOr<bool> SqliteJobStore::IsPortReserved(int port) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Stmt q, Stmt::Cached(db_, statements_, "SELECT 1 FROM ports WHERE port=?"));
  q.Bind(1, int64_t{port});
  return q.Step();
}

absl::Status SqliteJobStore::ReleasePorts(const JobKey& job) {
  absl::MutexLock lock(&mu_);
  return InTransaction(Commit::kBuffered, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(Stmt d, Stmt::Cached(db_, statements_,
                                          "DELETE FROM ports WHERE namespace=? AND "
                                          "job_name=?"));
    d.Bind(1, job.namespace_).Bind(2, job.name);
    return d.Run();
  });
}

absl::Status SqliteJobStore::AddObjects(const JobKey& job, const std::vector<ObjectName>& objects) {
  absl::MutexLock lock(&mu_);
  return InTransaction(Commit::kBuffered, [&]() -> absl::Status {
    RETURN_IF_ERROR(JobExistsLocked(job));
    for (const auto& [kind, name] : objects) {
      ASSIGN_OR_RETURN(Stmt ins, Stmt::Cached(db_, statements_,
                                              "INSERT OR IGNORE INTO objects (namespace, "
                                              "job_name, kind, name) VALUES (?,?,?,?)"));
      ins.Bind(1, job.namespace_).Bind(2, job.name).Bind(3, kind).Bind(4, name);
      RETURN_IF_ERROR(ins.Run());
    }
    return absl::OkStatus();
  });
}

absl::Status SqliteJobStore::RemoveObject(const JobKey& job, const ObjectName& object) {
  absl::MutexLock lock(&mu_);
  return InTransaction(Commit::kBuffered, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(Stmt d, Stmt::Cached(db_, statements_,
                                          "DELETE FROM objects WHERE namespace=? AND "
                                          "job_name=? AND kind=? AND name=?"));
    d.Bind(1, job.namespace_).Bind(2, job.name).Bind(3, object.first).Bind(4, object.second);
    return d.Run();
  });
}

absl::StatusOr<std::vector<ReplicaStore::ObjectName>> SqliteJobStore::ListObjects(
    const JobKey& job) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Stmt q, Stmt::Cached(db_, statements_,
                                        "SELECT kind, name FROM objects WHERE namespace=? AND "
                                        "job_name=? ORDER BY kind, name"));
  q.Bind(1, job.namespace_).Bind(2, job.name);
  std::vector<ObjectName> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return out;
    out.emplace_back(q.Text(0), q.Text(1));
  }
}

absl::Status SqliteJobStore::RemoveObjects(const JobKey& job) {
  absl::MutexLock lock(&mu_);
  return InTransaction(Commit::kBuffered, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(Stmt d, Stmt::Cached(db_, statements_,
                                          "DELETE FROM objects WHERE namespace=? AND job_name=?"));
    d.Bind(1, job.namespace_).Bind(2, job.name);
    return d.Run();
  });
}

}  // namespace coach::backend::local
