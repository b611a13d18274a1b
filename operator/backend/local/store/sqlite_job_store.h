#pragma once

// The local backend's job store (store::JobStore) on its sqlite database
// (sqlite_database.h): jobs, their status and their events. Open also makes the backend's
// replica store (replicas(), sqlite_replica_store.h) on the same database handle.
//
// Sharing: the job store and its replica store share one SqliteDatabase (one connection, one
// lock). Delete removes the job's row in one synced transaction, and the foreign keys
// cascade, in that same transaction, to what the replica store keeps of the job (replica
// records, port reservations, recorded objects) and to its events: a job and its records are
// gone together or not at all, and no replica store write interleaves with it. Delete does
// not stop processes (the backend stops them first, from the records).
//
// Power cuts: Create, Update and Delete are synced before they return; UpdateStatus and the
// events are committed without a sync of their own (SqliteDatabase's "Power cuts"): a power
// cut may lose the last of them, and what they said is derived again (status from the
// replicas' processes and exit files, which the shim syncs).
//
// Resource versions count from "1", one higher per write. Events: the newest
// max_events_per_job of a job are kept. Names are unique across kinds (a job of another kind
// with a taken name is AlreadyExists), so a key's kind is not read.
//
// Thread-safe: every call holds the database's lock.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/local/store/sqlite_database.h"
#include "operator/backend/local/store/sqlite_replica_store.h"
#include "operator/store/job_store.h"

namespace coach::backend::local {

class SqliteJobStore : public store::JobStore {
 public:
  struct Options {
    int max_events_per_job = 100;
    // How long a call waits for another connection's write lock (Open only).
    absl::Duration busy_timeout = absl::Seconds(5);
    // The clock for creation timestamps (and Open's migration records). Not owned.
    Clock* clock = Clock::Real();
  };

  // SqliteDatabase::Open of `state_dir` (coach.db in it), and the job store and its replica
  // store on it. Errors: as SqliteDatabase::Open.
  static absl::StatusOr<std::unique_ptr<SqliteJobStore>> Open(const std::string& state_dir,
                                                              Options options);
  static absl::StatusOr<std::unique_ptr<SqliteJobStore>> Open(const std::string& state_dir) {
    return Open(state_dir, Options());
  }

  // The job store, and its replica store, on an open database (shared with whoever else
  // holds it). options.busy_timeout is the database's, not read here.
  SqliteJobStore(std::shared_ptr<SqliteDatabase> database, Options options);

  // The replica store on this store's database; lives as long as this store.
  SqliteReplicaStore* replicas() { return replicas_.get(); }
  // The database this store and replicas() share.
  SqliteDatabase& database() { return *db_; }

  absl::StatusOr<api::v1::TrainingJob> Create(const api::v1::TrainingJob& job) override;
  absl::StatusOr<api::v1::TrainingJob> Get(const JobKey& key) override;
  absl::StatusOr<store::ListResult> List(const store::ListOptions& options) override;
  absl::StatusOr<api::v1::TrainingJob> Update(const api::v1::TrainingJob& job) override;
  absl::StatusOr<api::v1::TrainingJob> UpdateStatus(const api::v1::TrainingJob& job) override;
  // The job and, in the same transaction, its replica records, ports, objects and events.
  absl::Status Delete(const JobKey& key, std::optional<std::string> resource_version) override;

  absl::Status AppendEvent(const JobKey& job, const JobEvent& event) override;
  // One transaction for all of them.
  absl::Status AppendEvents(const JobKey& job, const std::vector<JobEvent>& events) override;
  absl::StatusOr<std::vector<JobEvent>> ListEvents(const JobKey& job) override;

 private:
  using Commit = SqliteDatabase::Commit;

  absl::StatusOr<api::v1::TrainingJob> GetLocked(const JobKey& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(db_->mu());
  absl::Status WriteJobLocked(const api::v1::TrainingJob& job, bool insert)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(db_->mu());
  absl::Time Now() const { return options_.clock->Now(); }

  const std::shared_ptr<SqliteDatabase> db_;
  const Options options_;
  const std::unique_ptr<SqliteReplicaStore> replicas_;
};

}  // namespace coach::backend::local
