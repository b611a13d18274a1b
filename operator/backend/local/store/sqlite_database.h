#pragma once

// The local backend's sqlite database, <state-dir>/coach.db: opening it (the state
// directory made private, a lost database refused), its one connection and the lock that
// serializes it, the prepared-statement cache, transactions, and the versioned schema that
// the stores on it (SqliteJobStore, SqliteReplicaStore) read and write.
//
// The file: WAL mode (every committed transaction survives a kill of the operator), foreign
// keys on (deleting a job cascades to its replicas, events, ports and objects, in the
// statement that deletes it), a busy timeout so several operator processes (or tools) can
// share the file. schema_migrations records each applied migration; Open applies the missing
// ones, each in its own transaction, and refuses a database written by a newer coach.
//
// Power cuts: a transaction commits kSynced (the log is fdatasynced before it returns) or
// kBuffered (committed without a sync of its own; it becomes power-cut durable with the next
// synced commit or checkpoint). A power cut may lose the buffered commits made after the last
// synced one, never one before it (the log is replayed as a prefix). Each store's header says
// which of its writes are synced; the migrations are.
//
// Sharing: the stores on one SqliteDatabase share its connection and its lock. A store
// holds mu() for the whole of each call and runs every write in one InTransaction, so a
// call's transaction never interleaves with another store's, and one store's write that
// reaches into another's tables (a job's Delete, by the cascades) is one transaction.
//
// Thread-safe: one connection, calls serialized by mu().

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/local/store/sqlite_statement.h"
#include "operator/store/job_store.h"

struct sqlite3;

namespace coach::backend::local {

// FailedPrecondition when `path` (the database) is missing or empty while `state_dir` holds
// what only a database that existed leaves (replica directories, a write-ahead log): opening
// it as a new, empty store would orphan those replicas and lose every job. OK otherwise.
absl::Status RefuseLostDatabase(const std::string& state_dir, const std::string& path);

class SqliteDatabase {
 public:
  struct Options {
    absl::Duration busy_timeout = absl::Seconds(5);
    // The clock for migration records. Not owned.
    Clock* clock = Clock::Real();
  };

  // The schema version this build writes.
  static constexpr int kSchemaVersion = 2;

  // Creates `state_dir` when missing, makes it private to this user (0700: it holds jobs'
  // environments, logs and processes) and opens (or creates) coach.db in it, its schema
  // brought to kSchemaVersion.
  // Errors: Internal (cannot create/open), FailedPrecondition (the database has a
  // schema newer than kSchemaVersion, or WAL cannot be enabled, or RefuseLostDatabase),
  // Unavailable (locked beyond the busy timeout).
  static absl::StatusOr<std::unique_ptr<SqliteDatabase>> Open(const std::string& state_dir,
                                                              Options options);
  static absl::StatusOr<std::unique_ptr<SqliteDatabase>> Open(const std::string& state_dir) {
    return Open(state_dir, Options());
  }

  SqliteDatabase(const SqliteDatabase&) = delete;
  SqliteDatabase& operator=(const SqliteDatabase&) = delete;
  // Finalizes the cached statements and closes the connection.
  ~SqliteDatabase();

  // The schema version recorded in the database.
  absl::StatusOr<int> SchemaVersion() ABSL_LOCKS_EXCLUDED(mu_);

  // The lock of the connection: held for each call of a store, around everything below.
  absl::Mutex& mu() ABSL_LOCK_RETURNED(mu_) { return mu_; }

  // kSynced: the commit fdatasyncs the log before it returns; kBuffered: it does not (see
  // "Power cuts" above).
  enum class Commit { kSynced, kBuffered };

  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT, rolling back when it (or the commit)
  // fails; returns its status. Errors: body's, Unavailable (another connection holds the
  // write lock beyond the busy timeout), Internal.
  absl::Status InTransaction(Commit commit, const std::function<absl::Status()>& body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `body` inside a read transaction (BEGIN ... COMMIT): its reads see one snapshot.
  // Errors: body's, or those of BEGIN.
  absl::Status InReadTransaction(const std::function<absl::Status()>& body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The cached statement for `sql` (SqliteStatement::Cached).
  absl::StatusOr<SqliteStatement> Statement(const std::string& sql)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // How many rows the last INSERT, UPDATE or DELETE changed.
  int Changes() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // OK when the jobs table holds `key` (kind not read), NotFound ("job <ns>/<name> not
  // found") otherwise: what a store checks before writing a row that references a job, whose
  // foreign key would otherwise fail as a constraint. Errors: also as Statement's.
  absl::Status JobExists(const store::JobKey& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

 private:
  SqliteDatabase(sqlite3* db, Options options);

  absl::Status Migrate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs one cached statement that returns no rows.
  absl::Status Run(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  sqlite3* const db_;
  SqliteStatement::Cache statements_ ABSL_GUARDED_BY(mu_);
  Commit commit_mode_ ABSL_GUARDED_BY(mu_) = Commit::kSynced;  // as Open sets it
  const Options options_;
};

}  // namespace coach::backend::local
