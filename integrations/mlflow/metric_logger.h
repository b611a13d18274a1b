#pragma once

// MetricLogger: metrics from the training side to one MLflow run, never in the way of training.
//
//   Log()  appends a point to a bounded in-memory buffer under a briefly held mutex and returns
//          (tens of nanoseconds; bench/mlflow measures it). It never blocks on the network, never
//          allocates beyond the point itself (keys up to 15 bytes are stored inline), never fails
//          the caller: a full buffer drops the point and counts it (Log returns false).
//   Sender threads (options.senders) take up to 1000 points at a time and send them with
//          TrackingClient::LogBatch. A transient error (server down, slow, 429/5xx: Unavailable or
//          DeadlineExceeded) keeps the points and retries with backoff until the server returns, so
//          an outage loses nothing as long as the buffer holds. With options.spill_path the
//          in-memory backlog moves to that file during an outage (bounded by max_spill_points) and
//          is read back first when delivery resumes. A permanent error (InvalidArgument) is
//          narrowed down by bisecting the batch, so one bad point does not take its 999 neighbours
//          with it; such points are counted as rejected. Other permanent errors (run deleted, auth)
//          reject the batch.
//
// Nothing is silently lost: every accepted or refused point ends up in exactly one of
// stats().delivered, dropped (buffer or spill full), rejected (the server refused it) or
// lost_at_shutdown (still buffered when Shutdown's deadline passed). Shutdown() logs a summary and,
// when anything was not delivered, sets the run tag options.loss_tag (default
// "coach.mlflow.undelivered_points") to that count.
//
// Ordering: points of one key are sent in Log order with one sender; with several senders or after
// an outage with spill, batches may land out of order (MLflow orders by step/timestamp anyway).
// Duplicates: a batch whose response was lost is sent again, as the Python client does.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "integrations/mlflow/tracking_client.h"

namespace coach::mlflow {

struct MetricLoggerOptions {
  // Points held in memory (accepted, not yet delivered). About 64 bytes each with short keys.
  int64_t max_buffered_points = 1 << 20;
  // Points per LogBatch call (at most kMaxMetricsPerBatch).
  int max_batch_points = kMaxMetricsPerBatch;
  // A sender waits at most this long for a batch to fill before sending what it has.
  absl::Duration max_batch_delay = absl::Milliseconds(100);
  // Concurrent LogBatch calls. One keeps per-key order; more raise throughput on a busy server.
  int senders = 1;
  // Backoff between attempts while the server is unavailable.
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(5);
  // When set, the backlog moves to this file (created/truncated) during an outage.
  std::string spill_path;
  int64_t max_spill_points = 50'000'000;
  // The clock of Log()'s default timestamp and of the backoff. Not owned.
  Clock* clock = Clock::Real();
  // Run tag set at shutdown when anything was not delivered ("" to skip).
  std::string loss_tag = "coach.mlflow.undelivered_points";
};

struct MetricLoggerStats {
  int64_t accepted = 0;          // Log() calls that took the point
  int64_t delivered = 0;         // points the server acknowledged
  int64_t dropped = 0;           // refused by Log() (buffer full) or by the spill file (full)
  int64_t rejected = 0;          // refused by the server or by key validation: permanent
  int64_t lost_at_shutdown = 0;  // still buffered when Shutdown's deadline passed
  int64_t buffered = 0;          // in memory now
  int64_t spilled = 0;           // on disk now
  int64_t failed_attempts = 0;   // LogBatch calls that failed transiently
  int64_t undelivered() const { return dropped + rejected + lost_at_shutdown; }
};

class MetricLogger {
 public:
  // `client` is not owned and must outlive the logger; configure its own retries short (a
  // RestTrackingClient with retry.max_attempts of 1-2 and a request timeout of seconds), since the
  // logger retries by itself. InvalidArgument for bad options, an unwritable spill path or an
  // empty run id.
  static absl::StatusOr<std::unique_ptr<MetricLogger>> Create(TrackingClient* client,
                                                              std::string run_id,
                                                              MetricLoggerOptions options = {});
  // Shutdown(absl::Seconds(5)) unless already shut down.
  ~MetricLogger();

  MetricLogger(const MetricLogger&) = delete;
  MetricLogger& operator=(const MetricLogger&) = delete;

  // Thread-safe, non-blocking. False when the point was dropped (buffer full, or after Shutdown);
  // the drop is counted either way.
  bool Log(absl::string_view key, double value, int64_t step, int64_t timestamp_ms);
  // Timestamp: now (wall clock, ms).
  bool Log(absl::string_view key, double value, int64_t step);

  // Waits until every point accepted before the call is resolved (delivered, rejected or dropped),
  // or `timeout` passes: DeadlineExceeded naming how many are still pending. Sends partial
  // batches at once. Logging may continue meanwhile.
  absl::Status Flush(absl::Duration timeout);

  // Flush(timeout), then stops the senders (a request in flight finishes or times out by the
  // client's own request timeout), counts what is left as lost_at_shutdown, removes the spill file,
  // logs the summary and sets the loss tag when needed. Idempotent; Log() afterwards drops.
  MetricLoggerStats Shutdown(absl::Duration timeout);

  MetricLoggerStats stats() const;
  const std::string& run_id() const { return run_id_; }

 private:
  MetricLogger(TrackingClient* client, std::string run_id, MetricLoggerOptions options);
  void SenderLoop();
  // Takes up to max_batch_points from spill/outbox/pending. Empty when stopping.
  std::vector<Metric> TakeBatch();
  // Sends one batch; transient failures return the status (points not yet accounted for).
  absl::Status Send(std::vector<Metric>& batch);
  void Requeue(std::vector<Metric> batch);
  void MaybeSpillLocked();
  void Resolve(int64_t n);

  TrackingClient* const client_;
  const std::string run_id_;
  const MetricLoggerOptions options_;

  // Training side: Log() appends here.
  std::mutex log_mu_;
  std::vector<Metric> pending_;
  int64_t accepted_ = 0;  // guarded by log_mu_
  bool closed_ = false;   // guarded by log_mu_
  std::atomic<int64_t> buffered_{0};
  std::atomic<int64_t> dropped_{0};

  // Sender side.
  std::mutex mu_;
  std::condition_variable work_cv_;      // senders wait for points / flush / stop
  std::condition_variable resolved_cv_;  // Flush waits for progress
  std::deque<Metric> outbox_;            // guarded by mu_
  std::vector<Metric> swap_;             // guarded by mu_ (capacity kept between swaps)
  int flush_waiters_ = 0;                // guarded by mu_
  bool stopping_ = false;                // guarded by mu_
  bool shut_down_ = false;               // guarded by mu_
  absl::Duration backoff_;               // guarded by mu_
  absl::Time retry_not_before_;          // guarded by mu_
  std::fstream spill_;                   // guarded by mu_
  int64_t spill_read_pos_ = 0;           // guarded by mu_ (bytes)
  int64_t spilled_ = 0;                  // guarded by mu_ (points)
  std::atomic<int64_t> resolved_{0};     // delivered + rejected + dropped after acceptance
  std::atomic<int64_t> delivered_{0};
  std::atomic<int64_t> rejected_{0};
  std::atomic<int64_t> failed_attempts_{0};
  int64_t lost_at_shutdown_ = 0;
  MetricLoggerStats final_stats_;
  std::vector<std::thread> senders_;
};

}  // namespace coach::mlflow
