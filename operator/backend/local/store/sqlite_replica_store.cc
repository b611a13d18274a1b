#include "operator/backend/local/store/sqlite_replica_store.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace coach::backend::local {

namespace {

const char kReplicaColumns[] =
    "namespace, job_name, name, replica_type, idx, pid, pgid, start_time, replica_files, "
    "log_path, phase, exit_code, restart_count, ports_json, gpus_json, started_us, "
    "finished_us, message, attempt";

absl::StatusOr<ReplicaRecord> ReadReplica(const SqliteStatement& s) {
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
  r.attempt = static_cast<int>(s.Int(18));
  return r;
}

// Every row of a query selecting port, namespace, job_name, replica, port_name.
absl::StatusOr<std::vector<PortReservation>> PortRows(SqliteStatement& q) {
  std::vector<PortReservation> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return out;
    out.push_back(
        PortReservation{static_cast<int>(q.Int(0)), {q.Text(1), q.Text(2)}, q.Text(3), q.Text(4)});
  }
}

}  // namespace

SqliteReplicaStore::SqliteReplicaStore(std::shared_ptr<SqliteDatabase> database)
    : db_(std::move(database)) {}

absl::Status SqliteReplicaStore::PutReplica(const ReplicaRecord& r) {
  // A record without a process is the intent written before the process starts: synced,
  // so that no crash, power cuts included, leaves a replica this store does not know of
  // (and would start again). What follows (the handle, the exit) is re-read from the
  // shim's process and exit files when a power cut loses it.
  const Commit commit = r.process.pid == 0 ? Commit::kSynced : Commit::kBuffered;
  absl::MutexLock lock(&db_->mu());
  return db_->InTransaction(commit, [&] { return PutReplicaLocked(r); });
}

absl::Status SqliteReplicaStore::PutReplicas(const std::vector<ReplicaRecord>& replicas) {
  if (replicas.empty()) return absl::OkStatus();
  Commit commit = Commit::kBuffered;
  for (const ReplicaRecord& r : replicas) {
    if (r.process.pid == 0) commit = Commit::kSynced;  // as PutReplica
  }
  absl::MutexLock lock(&db_->mu());
  return db_->InTransaction(commit, [&]() -> absl::Status {
    for (const ReplicaRecord& r : replicas) RETURN_IF_ERROR(PutReplicaLocked(r));
    return absl::OkStatus();
  });
}

absl::Status SqliteReplicaStore::PutReplicaLocked(const ReplicaRecord& r) {
  nlohmann::json ports = nlohmann::json::object();
  for (const auto& [k, v] : r.ports) ports[k] = v;
  nlohmann::json gpus = r.gpus;
  RETURN_IF_ERROR(db_->JobExists(r.job));
  ASSIGN_OR_RETURN(SqliteStatement s, db_->Statement(absl::StrCat(
                                          "INSERT OR REPLACE INTO replicas (", kReplicaColumns,
                                          ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")));
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
      .Bind(18, r.message)
      .Bind(19, int64_t{r.attempt});
  if (r.exit_code.has_value()) s.Bind(12, int64_t{*r.exit_code});
  return s.Run();
}

absl::StatusOr<std::vector<ReplicaRecord>> SqliteReplicaStore::QueryReplicas(const JobKey* job,
                                                                             bool running_only) {
  absl::MutexLock lock(&db_->mu());
  std::string sql = absl::StrCat("SELECT ", kReplicaColumns, " FROM replicas");
  if (job != nullptr) sql += " WHERE namespace=? AND job_name=?";
  // By the index on phase: the poller's look costs what runs, not what the store holds.
  if (running_only) sql += " WHERE phase=?";
  sql += " ORDER BY namespace, job_name, name";
  ASSIGN_OR_RETURN(SqliteStatement q, db_->Statement(sql));
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

absl::StatusOr<std::vector<ReplicaRecord>> SqliteReplicaStore::ListReplicas(const JobKey& job) {
  return QueryReplicas(&job, /*running_only=*/false);
}

absl::StatusOr<std::vector<ReplicaRecord>> SqliteReplicaStore::ListAllReplicas() {
  return QueryReplicas(nullptr, /*running_only=*/false);
}

absl::StatusOr<std::vector<ReplicaRecord>> SqliteReplicaStore::ListRunningReplicas() {
  return QueryReplicas(nullptr, /*running_only=*/true);
}

absl::Status SqliteReplicaStore::DeleteReplica(const JobKey& job, const std::string& name) {
  absl::MutexLock lock(&db_->mu());
  return db_->InTransaction(Commit::kBuffered, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(SqliteStatement d, db_->Statement("DELETE FROM replicas WHERE namespace=? AND "
                                                       "job_name=? AND name=?"));
    d.Bind(1, job.namespace_).Bind(2, job.name).Bind(3, name);
    RETURN_IF_ERROR(d.Run());
    if (db_->Changes() == 0) {
      return absl::NotFoundError(absl::StrCat("replica ", job.namespace_, "/", name, " not found"));
    }
    return absl::OkStatus();
  });
}

absl::Status SqliteReplicaStore::ReservePorts(const std::vector<PortReservation>& ports) {
  absl::MutexLock lock(&db_->mu());
  return db_->InTransaction(Commit::kBuffered, [&]() -> absl::Status {
    for (const PortReservation& p : ports) {
      RETURN_IF_ERROR(db_->JobExists(p.job));
      ASSIGN_OR_RETURN(SqliteStatement ins, db_->Statement("INSERT INTO ports (port, namespace, "
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

absl::StatusOr<std::vector<PortReservation>> SqliteReplicaStore::ListPortReservations() {
  absl::MutexLock lock(&db_->mu());
  ASSIGN_OR_RETURN(SqliteStatement q, db_->Statement("SELECT port, namespace, job_name, replica, "
                                                     "port_name FROM ports ORDER BY port"));
  return PortRows(q);
}

absl::StatusOr<std::vector<PortReservation>> SqliteReplicaStore::ListPortReservationsOf(
    const JobKey& job) {
  absl::MutexLock lock(&db_->mu());
  ASSIGN_OR_RETURN(SqliteStatement q,
                   db_->Statement("SELECT port, namespace, job_name, replica, port_name "
                                  "FROM ports WHERE namespace=? AND job_name=? "
                                  "ORDER BY port"));
  q.Bind(1, job.namespace_).Bind(2, job.name);
  return PortRows(q);
}

absl::StatusOr<bool> SqliteReplicaStore::IsPortReserved(int port) {
  absl::MutexLock lock(&db_->mu());
  ASSIGN_OR_RETURN(SqliteStatement q, db_->Statement("SELECT 1 FROM ports WHERE port=?"));
  q.Bind(1, int64_t{port});
  return q.Step();
}

absl::Status SqliteReplicaStore::ReleasePorts(const JobKey& job) {
  absl::MutexLock lock(&db_->mu());
  return db_->InTransaction(Commit::kBuffered, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(SqliteStatement d, db_->Statement("DELETE FROM ports WHERE namespace=? AND "
                                                       "job_name=?"));
    d.Bind(1, job.namespace_).Bind(2, job.name);
    return d.Run();
  });
}

absl::Status SqliteReplicaStore::AddObjects(const JobKey& job,
                                            const std::vector<ObjectName>& objects) {
  absl::MutexLock lock(&db_->mu());
  return db_->InTransaction(Commit::kBuffered, [&]() -> absl::Status {
    RETURN_IF_ERROR(db_->JobExists(job));
    for (const auto& [kind, name] : objects) {
      ASSIGN_OR_RETURN(SqliteStatement ins,
                       db_->Statement("INSERT OR IGNORE INTO objects (namespace, "
                                      "job_name, kind, name) VALUES (?,?,?,?)"));
      ins.Bind(1, job.namespace_).Bind(2, job.name).Bind(3, kind).Bind(4, name);
      RETURN_IF_ERROR(ins.Run());
    }
    return absl::OkStatus();
  });
}

absl::Status SqliteReplicaStore::RemoveObject(const JobKey& job, const ObjectName& object) {
  absl::MutexLock lock(&db_->mu());
  return db_->InTransaction(Commit::kBuffered, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(SqliteStatement d, db_->Statement("DELETE FROM objects WHERE namespace=? AND "
                                                       "job_name=? AND kind=? AND name=?"));
    d.Bind(1, job.namespace_).Bind(2, job.name).Bind(3, object.first).Bind(4, object.second);
    return d.Run();
  });
}

absl::StatusOr<std::vector<ReplicaStore::ObjectName>> SqliteReplicaStore::ListObjects(
    const JobKey& job) {
  absl::MutexLock lock(&db_->mu());
  ASSIGN_OR_RETURN(SqliteStatement q,
                   db_->Statement("SELECT kind, name FROM objects WHERE namespace=? AND "
                                  "job_name=? ORDER BY kind, name"));
  q.Bind(1, job.namespace_).Bind(2, job.name);
  std::vector<ObjectName> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return out;
    out.emplace_back(q.Text(0), q.Text(1));
  }
}

absl::Status SqliteReplicaStore::RemoveObjects(const JobKey& job) {
  absl::MutexLock lock(&db_->mu());
  return db_->InTransaction(Commit::kBuffered, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(SqliteStatement d,
                     db_->Statement("DELETE FROM objects WHERE namespace=? AND job_name=?"));
    d.Bind(1, job.namespace_).Bind(2, job.name);
    return d.Run();
  });
}

}  // namespace coach::backend::local
