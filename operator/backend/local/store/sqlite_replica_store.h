#pragma once

// The local backend's replica store (ReplicaStore: replica records, port reservations,
// recorded objects) on its sqlite database (sqlite_database.h), next to the jobs.
//
// Sharing: it is made on the SqliteDatabase of a SqliteJobStore (SqliteJobStore::replicas())
// and shares its connection and lock. Every row it writes references a job of that store
// (NotFound when there is none), and the job's Delete removes those rows in the job's own
// transaction (sqlite_job_store.h); no call here interleaves with it.
//
// Power cuts: a replica record without a process (pid 0: the intent written before its process
// starts) is synced before PutReplica/PutReplicas return, so that no crash leaves a replica
// the store does not know of (and would start again). The rest (a replica's handle and exit,
// port reservations, objects, deletions of records) is committed without a sync of its own
// (SqliteDatabase's "Power cuts"); what a power cut loses of it is derived again: a replica's
// handle and exit from the shim's process and exit files, ports reserved again at the job's
// first pass, objects recorded again by the next pass. One synced commit per job and one per
// replica (about nine when every commit syncs).
//
// Thread-safe: every call holds the database's lock.

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "operator/backend/local/store/replica_store.h"
#include "operator/backend/local/store/sqlite_database.h"

namespace coach::backend::local {

class SqliteReplicaStore : public ReplicaStore {
 public:
  // On an open database (shared with its job store).
  explicit SqliteReplicaStore(std::shared_ptr<SqliteDatabase> database);

  absl::Status PutReplica(const ReplicaRecord& replica) override;
  absl::Status PutReplicas(const std::vector<ReplicaRecord>& replicas) override;
  absl::StatusOr<std::vector<ReplicaRecord>> ListReplicas(const JobKey& job) override;
  absl::StatusOr<std::vector<ReplicaRecord>> ListAllReplicas() override;
  absl::StatusOr<std::vector<ReplicaRecord>> ListRunningReplicas() override;
  absl::Status DeleteReplica(const JobKey& job, const std::string& name) override;

  absl::Status ReservePorts(const std::vector<PortReservation>& ports) override;
  absl::StatusOr<std::vector<PortReservation>> ListPortReservations() override;
  absl::StatusOr<std::vector<PortReservation>> ListPortReservationsOf(const JobKey& job) override;
  absl::StatusOr<bool> IsPortReserved(int port) override;
  absl::Status ReleasePorts(const JobKey& job) override;

  absl::Status AddObjects(const JobKey& job, const std::vector<ObjectName>& objects) override;
  absl::Status RemoveObject(const JobKey& job, const ObjectName& object) override;
  absl::StatusOr<std::vector<ObjectName>> ListObjects(const JobKey& job) override;
  absl::Status RemoveObjects(const JobKey& job) override;

 private:
  using Commit = SqliteDatabase::Commit;

  // The INSERT OR REPLACE of one replica record, inside a transaction.
  absl::Status PutReplicaLocked(const ReplicaRecord& replica)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(db_->mu());
  // The records of `job` (all jobs' when null), only those Running when running_only.
  absl::StatusOr<std::vector<ReplicaRecord>> QueryReplicas(const JobKey* job, bool running_only);

  const std::shared_ptr<SqliteDatabase> db_;
};

}  // namespace coach::backend::local
