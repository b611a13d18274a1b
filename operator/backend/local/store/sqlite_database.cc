#include "operator/backend/local/store/sqlite_database.h"

#include <dirent.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "operator/backend/local/fs_util.h"

namespace coach::backend::local {

namespace {

// Migration N (1-based) brings the schema from version N-1 to N. Never edit a shipped
// entry: append a new one.
const char* const kMigrations[] = {
    // 1: the schema.
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
  replica_files TEXT NOT NULL,
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
-- The poller lists running replicas only, whatever the store holds.
CREATE INDEX replicas_by_phase ON replicas (phase);
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
-- A job's recorded non-pod objects (object_table.h): rows, not a file per job, as a file
-- costs an inode allocation, the dearest file-system call of a start on ext4.
CREATE TABLE objects (
  namespace TEXT NOT NULL,
  job_name TEXT NOT NULL,
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  PRIMARY KEY (namespace, job_name, kind, name),
  FOREIGN KEY (namespace, job_name) REFERENCES jobs (namespace, name) ON DELETE CASCADE
) WITHOUT ROWID;
)sql",
    // 2: the job attempt a replica's pod was created for (its coach.dev/attempt label).
    R"sql(
ALTER TABLE replicas ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == SqliteDatabase::kSchemaVersion,
              "one migration per schema version");

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

SqliteDatabase::SqliteDatabase(sqlite3* db, Options options)
    : db_(db), options_(std::move(options)) {}

SqliteDatabase::~SqliteDatabase() {
  absl::MutexLock lock(&mu_);
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

absl::StatusOr<std::unique_ptr<SqliteDatabase>> SqliteDatabase::Open(const std::string& state_dir,
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
  std::unique_ptr<SqliteDatabase> database(new SqliteDatabase(db, std::move(options)));
  absl::MutexLock lock(&database->mu_);
  sqlite3_busy_timeout(
      db, static_cast<int>(absl::ToInt64Milliseconds(database->options_.busy_timeout)));
  {
    ASSIGN_OR_RETURN(SqliteStatement wal, SqliteStatement::Prepare(db, "PRAGMA journal_mode=WAL"));
    ASSIGN_OR_RETURN(bool row, wal.Step());
    if (!row || wal.Text(0) != "wal") {
      return absl::FailedPreconditionError(absl::StrCat(path, ": cannot enable WAL"));
    }
  }
  RETURN_IF_ERROR(SqliteExec(db, "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"));
  RETURN_IF_ERROR(database->Migrate());
  return database;
}

absl::StatusOr<SqliteStatement> SqliteDatabase::Statement(const std::string& sql) {
  return SqliteStatement::Cached(db_, statements_, sql);
}

absl::Status SqliteDatabase::Run(const char* sql) {
  ASSIGN_OR_RETURN(SqliteStatement s, Statement(sql));
  return s.Run();
}

int SqliteDatabase::Changes() { return sqlite3_changes(db_); }

absl::Status SqliteDatabase::InTransaction(Commit commit,
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
  if (!s.ok()) (void)SqliteExec(db_, "ROLLBACK");
  return s;
}

absl::Status SqliteDatabase::InReadTransaction(const std::function<absl::Status()>& body) {
  RETURN_IF_ERROR(Run("BEGIN"));
  absl::Status s = body();
  (void)Run("COMMIT");
  return s;
}

absl::Status SqliteDatabase::Migrate() {
  RETURN_IF_ERROR(SqliteExec(db_,
                             "CREATE TABLE IF NOT EXISTS schema_migrations ("
                             "version INTEGER PRIMARY KEY, applied_us INTEGER NOT NULL)"));
  for (int version = 1; version <= kSchemaVersion; ++version) {
    RETURN_IF_ERROR(InTransaction(Commit::kSynced, [&]() -> absl::Status {
      // Checked inside the write transaction: two processes opening a new database at
      // once must not both apply a migration.
      ASSIGN_OR_RETURN(SqliteStatement q,
                       SqliteStatement::Prepare(db_, "SELECT MAX(version) FROM schema_migrations"));
      ASSIGN_OR_RETURN(bool row, q.Step());
      int64_t current = row && !q.IsNull(0) ? q.Int(0) : 0;
      if (current > kSchemaVersion) {
        return absl::FailedPreconditionError(
            absl::StrCat("coach.db has schema version ", current, "; this coach knows up to ",
                         kSchemaVersion, " (written by a newer coach?)"));
      }
      if (current >= version) return absl::OkStatus();
      RETURN_IF_ERROR(SqliteExec(db_, kMigrations[version - 1]));
      ASSIGN_OR_RETURN(
          SqliteStatement ins,
          SqliteStatement::Prepare(db_, "INSERT INTO schema_migrations VALUES (?, ?)"));
      ins.Bind(1, int64_t{version}).Bind(2, absl::ToUnixMicros(options_.clock->Now()));
      return ins.Run();
    }));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> SqliteDatabase::SchemaVersion() {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteStatement q, Statement("SELECT MAX(version) FROM schema_migrations"));
  ASSIGN_OR_RETURN(bool row, q.Step());
  return row && !q.IsNull(0) ? static_cast<int>(q.Int(0)) : 0;
}

absl::Status SqliteDatabase::JobExists(const store::JobKey& key) {
  ASSIGN_OR_RETURN(SqliteStatement q, Statement("SELECT 1 FROM jobs WHERE namespace=? AND name=?"));
  q.Bind(1, key.namespace_).Bind(2, key.name);
  ASSIGN_OR_RETURN(bool row, q.Step());
  if (row) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("job ", key.namespace_, "/", key.name, " not found"));
}

}  // namespace coach::backend::local
