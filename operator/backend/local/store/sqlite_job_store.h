#pragma once

// The local backend's store on sqlite, both the job store (store::JobStore) and the
// backend's replica records and port reservations (ReplicaStore): <state-dir>/coach.db in WAL mode
// (every committed transaction survives a kill of the operator), foreign keys on (deleting a
// job cascades to its replicas, events and ports), a busy timeout so several operator processes (or
// tools) can share the file, and a versioned schema: schema_migrations records each
// applied migration; Open applies the missing ones, each in its own transaction, and
// refuses a database written by a newer coach.
//
// Power cuts: the writes whose acknowledgement is a promise are synced before they return
// (synchronous=FULL): a job's Create, Update and Delete, a replica record without a process
// (the intent written before its process starts), and the migrations. The rest (status,
// events, a replica's handle and exit, port reservations, deletions of replica records) is
// committed without a sync of its own and becomes power-cut durable with the next synced
// commit or checkpoint; a power cut may lose those committed after the last synced one,
// never one before it (the log is replayed as a prefix), and what they said is derived again:
// status and a replica's exit from the replica's process and exit files (which the shim syncs),
// ports reserved again at the job's first pass. One synced commit per job and one per replica,
// where every commit used to sync (about nine per one-replica job).
//
// Statements are prepared once per connection and reused.
//
// Thread-safe: one connection, calls serialized by a mutex.

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/local/store/replica_store.h"
#include "operator/store/job_store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace coach::backend::local {

// FailedPrecondition when `path` (the database) is missing or empty while `state_dir` holds
// what only a database that existed leaves (replica directories, a write-ahead log): opening
// it as a new, empty store would orphan those replicas and lose every job. OK otherwise.
absl::Status RefuseLostDatabase(const std::string& state_dir, const std::string& path);

// Resource versions count from "1", one higher per write. Events: the newest
// max_events_per_job of a job are kept. Names are unique across kinds (a job of another kind
// with a taken name is AlreadyExists), so a key's kind is not read.
class SqliteJobStore : public store::JobStore, public ReplicaStore {
 public:
  struct Options {
    int max_events_per_job = 100;
    absl::Duration busy_timeout = absl::Seconds(5);
    // The clock for creation timestamps and migration records. Not owned.
    Clock* clock = Clock::Real();
  };

  // The schema version this build writes.
  static constexpr int kSchemaVersion = 3;

  // Creates `state_dir` when missing, makes it private to this user (0700: it holds jobs'
  // environments, logs and processes) and opens (or creates) coach.db in it.
  // Errors: Internal (cannot create/open), FailedPrecondition (the database has a
  // schema newer than kSchemaVersion, or WAL cannot be enabled, or RefuseLostDatabase),
  // Unavailable (locked beyond the busy timeout).
  static absl::StatusOr<std::unique_ptr<SqliteJobStore>> Open(const std::string& state_dir,
                                                              Options options);
  static absl::StatusOr<std::unique_ptr<SqliteJobStore>> Open(const std::string& state_dir) {
    return Open(state_dir, Options());
  }

  ~SqliteJobStore() override;

  // The schema version recorded in the database.
  absl::StatusOr<int> SchemaVersion();

  absl::StatusOr<api::v1::TrainingJob> Create(const api::v1::TrainingJob& job) override;
  absl::StatusOr<api::v1::TrainingJob> Get(const JobKey& key) override;
  absl::StatusOr<store::ListResult> List(const store::ListOptions& options) override;
  absl::StatusOr<api::v1::TrainingJob> Update(const api::v1::TrainingJob& job) override;
  absl::StatusOr<api::v1::TrainingJob> UpdateStatus(const api::v1::TrainingJob& job) override;
  absl::Status Delete(const JobKey& key, std::optional<std::string> resource_version) override;

  absl::Status PutReplica(const ReplicaRecord& replica) override;
  absl::Status PutReplicas(const std::vector<ReplicaRecord>& replicas) override;
  absl::StatusOr<std::vector<ReplicaRecord>> ListReplicas(const JobKey& job) override;
  absl::StatusOr<std::vector<ReplicaRecord>> ListAllReplicas() override;
  absl::StatusOr<std::vector<ReplicaRecord>> ListRunningReplicas() override;
  absl::Status DeleteReplica(const JobKey& job, const std::string& name) override;

  absl::Status AppendEvent(const JobKey& job, const JobEvent& event) override;
  // One transaction (one WAL sync) for all of them.
  absl::Status AppendEvents(const JobKey& job, const std::vector<JobEvent>& events) override;
  absl::StatusOr<std::vector<JobEvent>> ListEvents(const JobKey& job) override;

  absl::Status ReservePorts(const std::vector<PortReservation>& ports) override;
  absl::StatusOr<std::vector<PortReservation>> ListPortReservations() override;
  absl::StatusOr<std::vector<PortReservation>> ListPortReservationsOf(const JobKey& job) override;
  absl::StatusOr<bool> IsPortReserved(int port) override;

  absl::Status ReleasePorts(const JobKey& job) override;

  absl::Status AddObjects(const JobKey& job, const std::vector<ObjectName>& objects) override;
  absl::Status RemoveObject(const JobKey& job, const ObjectName& object) override;
  absl::StatusOr<std::vector<ObjectName>> ListObjects(const JobKey& job) override;
  absl::Status RemoveObjects(const JobKey& job) override;

  // Prepared statements by their SQL (internal; public for the .cc's statement helper).
  using StatementCache = std::map<std::string, sqlite3_stmt*>;

 private:
  SqliteJobStore(sqlite3* db, Options options);

  // kSynced: the commit fdatasyncs the log before it returns; kBuffered: it does not (see
  // "Power cuts" above).
  enum class Commit { kSynced, kBuffered };

  absl::Status Migrate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT, rolling back when it fails.
  // The INSERT OR REPLACE of one replica record, inside a transaction.
  absl::Status PutReplicaLocked(const ReplicaRecord& replica) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status InTransaction(Commit commit, const std::function<absl::Status()>& body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs one cached statement that returns no rows.
  absl::Status Run(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<api::v1::TrainingJob> GetLocked(const JobKey& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status JobExistsLocked(const JobKey& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteJobLocked(const api::v1::TrainingJob& job, bool insert)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<ReplicaRecord>> QueryReplicas(const JobKey* job, bool running_only);
  absl::Time Now() const { return options_.clock->Now(); }

  absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_);
  StatementCache statements_ ABSL_GUARDED_BY(mu_);
  Commit commit_mode_ ABSL_GUARDED_BY(mu_) = Commit::kSynced;  // as Open sets it
  Options options_;
};

}  // namespace coach::backend::local
