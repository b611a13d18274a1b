#pragma once

// The local backend's store on sqlite, both the job store (store::JobStore) and the
// backend's replica records and port reservations (ReplicaStore): <state-dir>/coach.db in WAL mode
// with synchronous=FULL (a committed transaction survives power loss), foreign keys on (deleting a
// job cascades to its replicas, events and ports), a busy timeout so several operator processes (or
// tools) can share the file, and a versioned schema: schema_migrations records each
// applied migration; Open applies the missing ones, each in its own transaction, and
// refuses a database written by a newer coach.
//
// Thread-safe: one connection, calls serialized by a mutex.

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/local/store/replica_store.h"
#include "operator/store/job_store.h"

struct sqlite3;

namespace coach::backend::local {

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
  static constexpr int kSchemaVersion = 1;

  // Creates `state_dir` when missing and opens (or creates) coach.db in it.
  // Errors: Internal (cannot create/open), FailedPrecondition (the database has a
  // schema newer than kSchemaVersion, or WAL cannot be enabled), Unavailable (locked
  // beyond the busy timeout).
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
  absl::StatusOr<std::vector<ReplicaRecord>> ListReplicas(const JobKey& job) override;
  absl::StatusOr<std::vector<ReplicaRecord>> ListAllReplicas() override;
  absl::Status DeleteReplica(const JobKey& job, const std::string& name) override;

  absl::Status AppendEvent(const JobKey& job, const JobEvent& event) override;
  // One transaction (one WAL sync) for all of them.
  absl::Status AppendEvents(const JobKey& job, const std::vector<JobEvent>& events) override;
  absl::StatusOr<std::vector<JobEvent>> ListEvents(const JobKey& job) override;

  absl::Status ReservePorts(const std::vector<PortReservation>& ports) override;
  absl::StatusOr<std::vector<PortReservation>> ListPortReservations() override;
  absl::Status ReleasePorts(const JobKey& job) override;

 private:
  SqliteJobStore(sqlite3* db, Options options);

  absl::Status Migrate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT, rolling back when it fails.
  absl::Status InTransaction(const std::function<absl::Status()>& body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<api::v1::TrainingJob> GetLocked(const JobKey& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status JobExistsLocked(const JobKey& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteJobLocked(const api::v1::TrainingJob& job, bool insert)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<ReplicaRecord>> QueryReplicas(const JobKey* job);
  absl::Time Now() const { return options_.clock->Now(); }

  absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_);
  Options options_;
};

}  // namespace coach::backend::local
