#pragma once

// The local backend's own durable records, next to the jobs (store::JobStore): the replica
// records that tie a job's pods to processes on this host, and TCP port reservations.
// SqliteReplicaStore implements it on the database of a SqliteJobStore, so that deleting a
// job (JobStore::Delete) deletes its replica records and port reservations in the same
// transaction; it does not stop processes (the caller stops them first, from the records).
//
// Every method is one transaction: after it returns OK the change survives a kill -9 of
// the operator. A power cut may lose the changes made since the last write that says it
// is synced (PutReplica of a record without a process); see sqlite_replica_store.h.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/v1/training_job.pb.h"
#include "operator/backend/local/process/process_handle.h"
#include "operator/model/observed_state.h"
#include "operator/store/job_store.h"

namespace coach::backend::local {

using store::JobEvent;
using store::JobKey;

// The local backend's key of a job: {namespace, name}, without the kind. The local store keeps
// names unique across kinds (as the API's Create refuses a second kind of a taken name), so
// its records name a job by its name alone.
inline JobKey KeyOf(const api::v1::TrainingJob& job) {
  return JobKey{job.metadata().namespace_(), job.metadata().name(), ""};
}

// One replica ("pod") of a job as the local backend runs it.
struct ReplicaRecord {
  JobKey job;
  std::string name;          // Pod name, unique within the job's namespace.
  std::string replica_type;  // "Worker", "Master", ...
  int index = 0;
  ProcessHandle process;  // pid 0 while not started.
  std::string log_path;
  model::PodPhase phase = model::PodPhase::kPending;
  std::optional<int> exit_code;
  int restart_count = 0;
  // The job attempt the pod was created for: its coach.dev/attempt label (0 without one).
  int attempt = 0;
  std::map<std::string, int> ports;  // Port name -> allocated TCP port.
  std::vector<int> gpus;             // Device indices (CUDA_VISIBLE_DEVICES).
  absl::Time started_at = absl::InfinitePast();
  absl::Time finished_at = absl::InfinitePast();
  std::string message;
};

struct PortReservation {
  int port = 0;
  JobKey job;
  std::string replica;    // Pod name.
  std::string port_name;  // "master", "rdzv", ...
};

class ReplicaStore {
 public:
  virtual ~ReplicaStore() = default;

  // Inserts or replaces the record (job, name). A record without a process (pid 0) is
  // synced, power cuts included, before this returns. Errors: NotFound (no such job).
  virtual absl::Status PutReplica(const ReplicaRecord& replica) = 0;
  // PutReplica of each, in one transaction (all or none): one sync for the records of a
  // pass's pods. Errors: as PutReplica.
  virtual absl::Status PutReplicas(const std::vector<ReplicaRecord>& replicas) = 0;
  // Ordered by name. Errors: none beyond storage (an unknown job has no replicas).
  virtual absl::StatusOr<std::vector<ReplicaRecord>> ListReplicas(const JobKey& job) = 0;
  // Every job's replicas, ordered by (namespace, job, name): re-adoption at startup.
  virtual absl::StatusOr<std::vector<ReplicaRecord>> ListAllReplicas() = 0;
  // The records in phase Running, every job's, in the same order: what the poller watches.
  // Costs what runs, not what the store holds.
  virtual absl::StatusOr<std::vector<ReplicaRecord>> ListRunningReplicas() = 0;
  // Errors: NotFound (no such record).
  virtual absl::Status DeleteReplica(const JobKey& job, const std::string& name) = 0;

  // Reserves all the ports or none. Errors: NotFound (no such job), AlreadyExists (a
  // port is reserved already, by any job; nothing was reserved).
  virtual absl::Status ReservePorts(const std::vector<PortReservation>& ports) = 0;
  // Every reservation, ordered by port.
  virtual absl::StatusOr<std::vector<PortReservation>> ListPortReservations() = 0;
  // The job's reservations, ordered by port; costs what the job holds.
  virtual absl::StatusOr<std::vector<PortReservation>> ListPortReservationsOf(
      const JobKey& job) = 0;
  // Whether any job holds `port`.
  virtual absl::StatusOr<bool> IsPortReserved(int port) = 0;
  // Releases every port of the job (also done when the job is deleted).
  virtual absl::Status ReleasePorts(const JobKey& job) = 0;

  // The job's recorded non-pod objects (object_table.h), as (kind, name). Not synced: a
  // power cut may lose the last ones added or removed (each is only a name the next pass
  // records again). Deleting the job deletes them.
  using ObjectName = std::pair<std::string, std::string>;
  // Adds those not recorded yet, all in one transaction. Errors: NotFound (no such job).
  virtual absl::Status AddObjects(const JobKey& job, const std::vector<ObjectName>& objects) = 0;
  // Idempotent.
  virtual absl::Status RemoveObject(const JobKey& job, const ObjectName& object) = 0;
  // Ordered by (kind, name); costs what the job holds.
  virtual absl::StatusOr<std::vector<ObjectName>> ListObjects(const JobKey& job) = 0;
  // Idempotent.
  virtual absl::Status RemoveObjects(const JobKey& job) = 0;
};

}  // namespace coach::backend::local
