#pragma once

// LogKeeper: keeps each attempt's log of each replica, and a deleted job's record, where they
// outlive the pods (docs/history.md). It reads a pod's log through the backend before the
// controller deletes the pod (a restart, cleanPodPolicy), when a job finishes and when it is
// deleted, and hands it on:
//   - to the history store (a bucket, history_store.h) when the operator has one;
//   - to the job's MLflow run (logs/attempt-<n>/<replica>.log) when the job is tracked.
// It reads back what it kept for `coach logs --attempt` and `coach history --deleted`.
//
// Callers may rely on:
//   - The JobObserver calls never wait on the store or MLflow: reads go to the backend (bounded
//     by max_log_bytes per replica, `readers` at once across all callers); writes are queued, at
//     most max_pending_bytes, and written by `writers` threads. A deleted job's record is written
//     after every log of the job queued before it.
//   - A caller that would queue past max_pending_bytes waits for room, up to max_wait_for_room
//     (a restart's pods are deleted a little later rather than without their logs); past it,
//     or when nothing writes (not started), the log is dropped and counted.
//   - A store write that fails as worth retrying (Unavailable, Aborted) is retried with backoff
//     up to max_write_tries; then dropped, counted and logged.
//   - Kept logs are the last max_log_bytes bytes of each replica's log.
// Metrics: coach_kept_logs_total{result: kept, dropped, failed}, coach_kept_log_bytes_total,
// coach_history_pending_bytes.
//
// Thread-safe.

#include <atomic>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/v1/training_service.pb.h"
#include "common/clock.h"
#include "operator/backend/backend.h"
#include "operator/core/job_observer.h"
#include "operator/history/history_record.h"
#include "operator/history/history_store.h"
#include "operator/history/mlflow_log_sink.h"
#include "operator/metrics/registry.h"

namespace coach::history {

struct LogKeeperOptions {
  // Per replica and attempt: the log's last bytes that are kept.
  int64_t max_log_bytes = 8 << 20;
  // Logs read and not yet written: beyond this a caller waits for room (max_wait_for_room),
  // then the log is dropped (counted).
  int64_t max_pending_bytes = 256 << 20;
  absl::Duration max_wait_for_room = absl::Seconds(60);
  // Pod logs read at once, all callers together.
  int readers = 16;
  // Threads writing to the store (a PUT waits on the store: one writer is its latency's slave).
  int writers = 8;
  int max_write_tries = 5;
  absl::Duration backoff_base = absl::Milliseconds(500);
  // A deleted job's record and logs stay this long in the store.
  absl::Duration retention = absl::Hours(24 * 30);
  absl::Duration sweep_every = absl::Hours(1);
};

class LogKeeper final : public core::JobObserver {
 public:
  // Nothing is owned. `store` and `mlflow` may be null (nothing is kept there).
  LogKeeper(LogKeeperOptions options, backend::Backend* backend, HistoryStore* store,
            MlflowLogSink* mlflow, ::coach::Clock* clock, metrics::Registry* registry);
  ~LogKeeper() override;  // Stop(absl::ZeroDuration())

  void Start();
  // Writes what is queued for up to `drain`, then stops.
  void Stop(absl::Duration drain);

  // A job seen finished for the first time in this process: its last attempt's logs are kept
  // in the store (the tracker keeps them in MLflow), read on the writer unless kept already.
  void JobSeen(const model::Job& job) override;
  // The job's live logs and its record (the MLflow sink reads its own logs, as the tracker).
  void JobDeleting(const model::Job& job) override;
  void PodsDeleting(const model::Job& job, const std::vector<model::ObservedPod>& pods) override;
  // The job is gone from the store already (deleted with kubectl): its record, and whatever logs
  // its pods, which the garbage collector is deleting, still give. Returns at once; the reads
  // happen on the writer. A job recorded by JobDeleting is not recorded again.
  void JobGone(const model::Job& job);
  std::optional<absl::Time> HoldStartUntil(const model::Job&) override { return std::nullopt; }

  bool has_store() const { return store_ != nullptr; }

  struct KeptLog {
    std::string replica;
    std::string source;  // "kept/store" or "kept/mlflow"
    std::string text;
  };
  // The kept logs of `attempt`: `replica`'s, or every replica's. NotFound when none is kept.
  absl::StatusOr<std::vector<KeptLog>> Read(const model::Job& job, int attempt,
                                            const std::string& replica);
  // The records of deleted jobs (HistoryStore::ListRecords), each with its kept logs listed: the
  // store's, else those kept in MLflow runs. FailedPrecondition with neither.
  absl::StatusOr<std::vector<api::v1::JobHistory>> ListDeleted(const std::string& ns,
                                                               const std::string& name, int max,
                                                               bool* truncated);
  // A deleted job's record, by namespace and uid (and name): the store's, else an MLflow run's.
  // NotFound when none is kept.
  absl::StatusOr<api::v1::JobHistory> DeletedRecord(const std::string& ns, const std::string& name,
                                                    const std::string& uid);

  // Waits until nothing is queued or being written, or `timeout`: false then (tests).
  bool WaitIdle(absl::Duration timeout);

 private:
  struct Write {
    JobRef job;
    int attempt = 0;
    std::string replica;
    std::string text;                           // a log, or
    std::optional<api::v1::JobHistory> record;  // a deleted job's record
    std::optional<model::Job> gone;             // JobGone's: read its logs, then its record
    std::optional<model::Job> finished;         // JobSeen's: read its last attempt's logs
    int tries = 0;
    absl::Time not_before;
    bool is_log() const { return !record && !gone && !finished; }
    size_t bytes() const {
      return text.size() + (record ? record->ByteSizeLong() : 0) +
             (gone ? gone->ByteSizeLong() : 0) + (finished ? finished->ByteSizeLong() : 0);
    }
  };

  // Every replica's log (the backend's current pods), each cut to max_log_bytes.
  std::map<std::string, std::string> ReadLive(const model::Job& job);
  std::map<std::string, std::string> ReadPods(const model::Job& job,
                                              const std::vector<model::ObservedPod>& pods);
  // Hands the logs on: queued for the store, given to the MLflow sink.
  void Keep(const model::Job& job, int attempt, std::map<std::string, std::string> logs);
  void Enqueue(Write write);
  // JobSeen's work, on the writer.
  void KeepFinished(const model::Job& job);
  // The logs JobDeleting/JobGone read, then the record, queued.
  void QueueDeleted(const model::Job& job, std::map<std::string, std::string> logs);
  void Writer();
  void Sweep();

  const LogKeeperOptions options_;
  backend::Backend* const backend_;
  HistoryStore* const store_;
  MlflowLogSink* const mlflow_;
  ::coach::Clock* const clock_;
  metrics::Family* kept_ = nullptr;
  metrics::Family* kept_bytes_ = nullptr;
  metrics::Family* pending_gauge_ = nullptr;

  absl::Mutex mu_;
  absl::CondVar cv_;
  std::deque<Write> queue_ ABSL_GUARDED_BY(mu_);
  int64_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int writing_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::set<std::string> finished_kept_ ABSL_GUARDED_BY(mu_);  // uids
  // Uids whose record was queued, the oldest first: a deletion seen twice (JobService's, then the
  // watch's) is recorded once. Bounded.
  std::deque<std::string> recorded_order_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> recorded_ ABSL_GUARDED_BY(mu_);
  // Marks `uid` recorded; false when it was already.
  bool MarkRecorded(const std::string& uid);
  absl::Time next_sweep_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::vector<std::thread> writers_;
  std::atomic<bool> running_{false};  // writers_ run: a caller may wait for room
  // Log writes of each job (uid) queued or being written: its record waits for them.
  std::map<std::string, int> logs_pending_ ABSL_GUARDED_BY(mu_);
  // Drops since the last warning about them (one warning per 10 s).
  int64_t dropped_unreported_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_drop_warning_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // Reads of pod logs in flight, at most options_.readers.
  absl::Mutex reads_mu_;
  int reads_ ABSL_GUARDED_BY(reads_mu_) = 0;
};

}  // namespace coach::history
