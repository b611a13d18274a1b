#include "operator/history/log_keeper.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "operator/backend/log_tails.h"
#include "operator/reconcile/attempt_history.h"
#include "operator/reconcile/conditions.h"

namespace coach::history {
namespace {

JobRef RefOf(const model::Job& job) {
  return {job.metadata().namespace_(), job.metadata().name(), job.metadata().uid()};
}

std::string KeyOf(const JobRef& job) { return absl::StrCat(job.namespace_, "/", job.name); }

bool Retryable(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsAborted(status) || absl::IsDeadlineExceeded(status);
}

}  // namespace

LogKeeper::LogKeeper(LogKeeperOptions options, backend::Backend* backend, HistoryStore* store,
                     MlflowLogSink* mlflow, ::coach::Clock* clock, metrics::Registry* registry)
    : options_(std::move(options)),
      backend_(backend),
      store_(store),
      mlflow_(mlflow),
      clock_(clock) {
  if (registry != nullptr) {
    kept_ = registry->Counter("coach_kept_logs_total",
                              "Replica logs of an attempt handed to the history store, by result",
                              {"result"});
    kept_bytes_ =
        registry->Counter("coach_kept_log_bytes_total", "Bytes of replica logs kept in the store");
    pending_gauge_ = registry->Gauge("coach_history_pending_bytes",
                                     "Bytes read for the history store and not yet written");
  }
}

LogKeeper::~LogKeeper() { Stop(absl::ZeroDuration()); }

void LogKeeper::Start() {
  if (store_ == nullptr || !writers_.empty()) return;
  for (int i = 0; i < std::max(options_.writers, 1); ++i) {
    writers_.emplace_back([this] { Writer(); });
  }
  running_ = true;
}

void LogKeeper::Stop(absl::Duration drain) {
  if (writers_.empty()) return;
  WaitIdle(drain);
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    cv_.SignalAll();
  }
  for (std::thread& writer : writers_) writer.join();
  writers_.clear();
  running_ = false;
}

bool LogKeeper::WaitIdle(absl::Duration timeout) {
  // Counted in waits rather than read from clock_: a test's fake clock stands still.
  const absl::Duration step = absl::Milliseconds(20);
  absl::MutexLock lock(&mu_);
  for (absl::Duration waited; !queue_.empty() || writing_ > 0; waited += step) {
    if (waited >= timeout) return false;
    cv_.WaitWithTimeout(&mu_, step);
  }
  return true;
}

std::map<std::string, std::string> LogKeeper::ReadLive(const model::Job& job) {
  absl::StatusOr<std::map<std::string, std::string>> logs =
      backend::ReadLogTails(*backend_, job, backend::LogOptions{}, options_.max_log_bytes);
  if (logs.ok()) return std::move(logs).value();
  if (!absl::IsNotFound(logs.status())) {
    spdlog::warn("history: logs of {} not read: {}", KeyOf(RefOf(job)), logs.status().ToString());
  }
  return {};
}

std::map<std::string, std::string> LogKeeper::ReadPods(
    const model::Job& job, const std::vector<model::ObservedPod>& pods) {
  std::vector<std::string> replicas;
  for (const model::ObservedPod& pod : pods) {
    replicas.push_back(reconcile::LogReplicaName(job, pod.name));
  }
  std::vector<std::string> texts(replicas.size());
  std::atomic<size_t> next{0};
  auto read_some = [&] {
    for (size_t i = next++; i < replicas.size(); i = next++) {
      {
        absl::MutexLock lock(&reads_mu_);
        reads_mu_.Await(absl::Condition(
            +[](LogKeeper* k) ABSL_EXCLUSIVE_LOCKS_REQUIRED(k->reads_mu_) {
              return k->reads_ < std::max(k->options_.readers, 1);
            },
            this));
        ++reads_;
      }
      backend::LogOptions options;
      options.replica = replicas[i];
      absl::StatusOr<std::map<std::string, std::string>> read =
          backend::ReadLogTails(*backend_, job, options, options_.max_log_bytes);
      if (read.ok()) {
        auto it = read->find(replicas[i]);
        if (it != read->end()) texts[i] = std::move(it->second);
      } else {
        spdlog::warn("history: log of {} {} not read: {}", KeyOf(RefOf(job)), replicas[i],
                     read.status().ToString());
      }
      absl::MutexLock lock(&reads_mu_);
      --reads_;
    }
  };
  const size_t threads =
      std::min(replicas.size(), static_cast<size_t>(std::max(options_.readers, 1)));
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t) workers.emplace_back(read_some);
  read_some();
  for (std::thread& w : workers) w.join();
  std::map<std::string, std::string> logs;
  for (size_t i = 0; i < replicas.size(); ++i) logs[replicas[i]] = std::move(texts[i]);
  return logs;
}

void LogKeeper::Keep(const model::Job& job, int attempt, std::map<std::string, std::string> logs) {
  if (logs.empty()) return;
  const bool tracked = mlflow_ != nullptr && mlflow_->Tracks(job);
  if (store_ != nullptr) {
    for (auto& [replica, text] : logs) {
      Write write;
      write.job = RefOf(job);
      write.attempt = attempt;
      write.replica = replica;
      // The MLflow sink takes the map after: only then is a copy needed.
      write.text = tracked ? text : std::move(text);
      Enqueue(std::move(write));
    }
  }
  if (tracked) mlflow_->KeepLogs(job, attempt, std::move(logs));
}

void LogKeeper::Enqueue(Write write) {
  const int64_t bytes = static_cast<int64_t>(write.bytes());
  absl::MutexLock lock(&mu_);
  if (pending_bytes_ + bytes > options_.max_pending_bytes && running_ && !stopping_ &&
      bytes <= options_.max_pending_bytes) {
    // Reads outrun the store (a restart of thousands of pods): the reader waits, so memory
    // stays bounded and the logs are kept.
    auto room = [this, bytes]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || pending_bytes_ + bytes <= options_.max_pending_bytes;
    };
    absl::Duration waited;
    const absl::Duration step = absl::Milliseconds(20);
    // Counted in waits rather than read from clock_, which a test may hold still.
    while (!room() && waited < options_.max_wait_for_room) {
      cv_.WaitWithTimeout(&mu_, step);
      waited += step;
    }
  }
  if (pending_bytes_ + bytes > options_.max_pending_bytes) {
    if (kept_ != nullptr) kept_->Add({"dropped"});
    ++dropped_unreported_;
    // A restart of thousands of pods can drop thousands: one line says it.
    const absl::Time now = clock_->Now();
    if (now - last_drop_warning_ >= absl::Seconds(10)) {
      spdlog::warn(
          "history: {} bytes wait for the store already; {} log(s) or record(s) not "
          "kept (the latest: {} {} of attempt {})",
          pending_bytes_, dropped_unreported_, KeyOf(write.job),
          write.record ? "record" : write.replica, write.attempt);
      dropped_unreported_ = 0;
      last_drop_warning_ = now;
    }
    return;
  }
  if (write.is_log()) ++logs_pending_[write.job.uid];
  pending_bytes_ += bytes;
  if (pending_gauge_ != nullptr) pending_gauge_->Set({}, static_cast<double>(pending_bytes_));
  queue_.push_back(std::move(write));
  cv_.SignalAll();
}

void LogKeeper::PodsDeleting(const model::Job& job, const std::vector<model::ObservedPod>& pods) {
  if (store_ == nullptr && (mlflow_ == nullptr || !mlflow_->Tracks(job))) return;
  std::map<int, std::vector<model::ObservedPod>> by_attempt;
  for (const model::ObservedPod& pod : pods) by_attempt[pod.attempt].push_back(pod);
  for (const auto& [attempt, of_attempt] : by_attempt) {
    Keep(job, attempt, ReadPods(job, of_attempt));
  }
}

void LogKeeper::JobSeen(const model::Job& job) {
  if (store_ == nullptr || !reconcile::IsFinished(job.status())) return;
  {
    absl::MutexLock lock(&mu_);
    if (!finished_kept_.insert(job.metadata().uid()).second) return;
  }
  Write write;
  write.job = RefOf(job);
  write.finished = job;
  Enqueue(std::move(write));
}

void LogKeeper::KeepFinished(const model::Job& job) {
  const int attempt = job.status().coach().attempt();
  // After an operator restart every finished job is seen again: what is kept already is not
  // read twice.
  absl::StatusOr<std::vector<std::string>> kept = store_->ReplicasOf(RefOf(job), attempt, 1);
  if (kept.ok() && !kept->empty()) return;
  Keep(job, attempt, ReadLive(job));
}

bool LogKeeper::MarkRecorded(const std::string& uid) {
  absl::MutexLock lock(&mu_);
  if (!recorded_.insert(uid).second) return false;
  recorded_order_.push_back(uid);
  if (recorded_order_.size() > 4096) {
    recorded_.erase(recorded_order_.front());
    recorded_order_.pop_front();
  }
  return true;
}

void LogKeeper::JobDeleting(const model::Job& job) {
  const bool tracked = mlflow_ != nullptr && mlflow_->Tracks(job);
  if ((store_ == nullptr && !tracked) || !MarkRecorded(job.metadata().uid())) return;
  // The tracker, an observer too, read the logs for the run just before.
  if (tracked) mlflow_->KeepRecord(NewRecord(job, clock_->Now()), /*read_logs=*/false);
  if (store_ != nullptr) QueueDeleted(job, ReadLive(job));
}

void LogKeeper::JobGone(const model::Job& job) {
  const bool tracked = mlflow_ != nullptr && mlflow_->Tracks(job);
  if ((store_ == nullptr && !tracked) || !MarkRecorded(job.metadata().uid())) return;
  if (tracked) mlflow_->KeepRecord(NewRecord(job, clock_->Now()), /*read_logs=*/true);
  if (store_ == nullptr) return;
  Write write;
  write.job = RefOf(job);
  write.gone = job;
  Enqueue(std::move(write));
}

void LogKeeper::QueueDeleted(const model::Job& job, std::map<std::string, std::string> logs) {
  const int attempt = job.status().coach().attempt();
  Write record;
  record.job = RefOf(job);
  record.record = NewRecord(job, clock_->Now());
  // Written after the logs: a record always names logs that are there.
  for (const auto& [replica, text] : logs) {
    Write write;
    write.job = record.job;
    write.attempt = attempt;
    write.replica = replica;
    write.text = std::move(text);
    Enqueue(std::move(write));
  }
  Enqueue(std::move(record));
}

void LogKeeper::Writer() {
  while (true) {
    Write write;
    bool sweep = false;
    {
      absl::MutexLock lock(&mu_);
      auto ready = queue_.end();
      while (!stopping_) {
        const absl::Time now = clock_->Now();
        if (now >= next_sweep_) break;
        ready = std::find_if(queue_.begin(), queue_.end(), [&](const Write& w) {
          if (w.not_before > now) return false;
          // A record names its job's logs: it waits until they are written.
          return !w.record || logs_pending_.count(w.job.uid) == 0;
        });
        if (ready != queue_.end()) break;
        cv_.WaitWithTimeout(&mu_, queue_.empty() ? absl::Seconds(5) : absl::Milliseconds(100));
      }
      if (stopping_) return;
      if (clock_->Now() >= next_sweep_) {
        next_sweep_ = clock_->Now() + options_.sweep_every;
        sweep = true;
      } else {
        write = std::move(*ready);
        queue_.erase(ready);
        ++writing_;
      }
    }
    if (sweep) {
      Sweep();
      continue;
    }
    if (write.gone || write.finished) {
      if (write.gone) QueueDeleted(*write.gone, ReadLive(*write.gone));
      if (write.finished) KeepFinished(*write.finished);
      absl::MutexLock lock(&mu_);
      --writing_;
      pending_bytes_ -= static_cast<int64_t>(write.bytes());
      cv_.SignalAll();
      continue;
    }
    absl::Status written;
    if (write.record) {
      // The record names the logs kept so far, which readers list without a listing per job.
      absl::StatusOr<std::vector<std::string>> logs =
          store_->ListLogs(write.job, HistoryStore::kMaxListedRecords);
      if (logs.ok()) {
        write.record->clear_logs();
        for (const std::string& log : *logs) write.record->add_logs(log);
        written = store_->PutRecord(*write.record);
      } else {
        written = logs.status();
      }
    } else {
      written = store_->PutLog(write.job, write.attempt, write.replica, write.text);
    }
    absl::MutexLock lock(&mu_);
    --writing_;
    const int64_t bytes = static_cast<int64_t>(write.bytes());
    if (!written.ok() && Retryable(written) && ++write.tries < options_.max_write_tries) {
      write.not_before = clock_->Now() + options_.backoff_base * (1 << (write.tries - 1));
      queue_.push_back(std::move(write));
    } else {
      pending_bytes_ -= bytes;
      if (pending_gauge_ != nullptr) pending_gauge_->Set({}, static_cast<double>(pending_bytes_));
      if (write.is_log()) {
        auto pending = logs_pending_.find(write.job.uid);
        if (pending != logs_pending_.end() && --pending->second <= 0) logs_pending_.erase(pending);
      }
      if (written.ok()) {
        if (kept_ != nullptr && !write.record) kept_->Add({"kept"});
        if (kept_bytes_ != nullptr) kept_bytes_->Add({}, static_cast<double>(bytes));
      } else {
        spdlog::warn("history: {} {} of attempt {} not kept: {}", KeyOf(write.job),
                     write.record ? "record" : write.replica, write.attempt, written.ToString());
        if (kept_ != nullptr) kept_->Add({"failed"});
      }
    }
    cv_.SignalAll();
  }
}

void LogKeeper::Sweep() {
  absl::StatusOr<int> swept = store_->Sweep(clock_->Now(), options_.retention);
  if (!swept.ok()) {
    spdlog::warn("history: the retention sweep failed: {}", swept.status().ToString());
  } else if (*swept > 0) {
    spdlog::info("history: {} deleted job(s) past their retention removed from the store", *swept);
  }
}

absl::StatusOr<std::vector<LogKeeper::KeptLog>> LogKeeper::Read(const model::Job& job, int attempt,
                                                                const std::string& replica) {
  const JobRef ref = RefOf(job);
  std::vector<KeptLog> out;
  absl::Status last = absl::NotFoundError(
      absl::StrCat("no log of attempt ", attempt, " of ", KeyOf(ref),
                   replica.empty() ? "" : " replica " + replica,
                   " is kept (no history store, and the job is not tracked in MLflow)"));
  if (store_ != nullptr) {
    std::vector<std::string> replicas;
    if (!replica.empty()) {
      replicas.push_back(replica);
    } else {
      absl::StatusOr<std::vector<std::string>> listed = store_->ReplicasOf(ref, attempt, 1000);
      if (listed.ok())
        replicas = std::move(listed).value();
      else
        last = listed.status();
    }
    for (const std::string& r : replicas) {
      absl::StatusOr<std::string> text =
          store_->GetLog(ref, attempt, r, static_cast<size_t>(options_.max_log_bytes) * 2);
      if (text.ok()) {
        out.push_back({r, "kept/store", std::move(text).value()});
      } else {
        last = text.status();
      }
    }
    if (!out.empty()) return out;
    if (replicas.empty()) {
      last = absl::NotFoundError(absl::StrCat("no log of attempt ", attempt, " of ", KeyOf(ref),
                                              " is kept in the history store"));
    }
  }
  if (mlflow_ != nullptr && mlflow_->Tracks(job)) {
    std::vector<std::string> replicas;
    if (!replica.empty()) {
      replicas.push_back(replica);
    } else {
      absl::StatusOr<std::vector<std::string>> listed = mlflow_->ReplicasOf(job, attempt);
      if (listed.ok()) {
        replicas = std::move(listed).value();
      } else {
        last = listed.status();
      }
    }
    for (const std::string& r : replicas) {
      absl::StatusOr<std::string> text = mlflow_->ReadLog(job, attempt, r);
      if (text.ok()) {
        out.push_back({r, "kept/mlflow", std::move(text).value()});
      } else {
        last = text.status();
      }
    }
    if (!out.empty()) return out;
  }
  return last;
}

absl::StatusOr<std::vector<api::v1::JobHistory>> LogKeeper::ListDeleted(const std::string& ns,
                                                                        const std::string& name,
                                                                        int max, bool* truncated) {
  if (store_ != nullptr) return store_->ListRecords(ns, name, max, truncated);
  if (mlflow_ != nullptr) return mlflow_->ListDeleted(ns, name, max, truncated);
  return absl::FailedPreconditionError(
      "this operator keeps no history of deleted jobs: it has no history store "
      "(--history-s3-endpoint) and no MLflow tracking (docs/history.md)");
}

absl::StatusOr<api::v1::JobHistory> LogKeeper::DeletedRecord(const std::string& ns,
                                                             const std::string& name,
                                                             const std::string& uid) {
  if (store_ == nullptr && mlflow_ == nullptr) {
    return absl::FailedPreconditionError(
        "this operator keeps no history of deleted jobs: it has no history store "
        "(--history-s3-endpoint) and no MLflow tracking (docs/history.md)");
  }
  if (store_ == nullptr) return mlflow_->DeletedRecord(ns, name, uid);
  absl::StatusOr<api::v1::JobHistory> record = store_->GetRecord({ns, name, uid});
  if (!absl::IsNotFound(record.status()) || mlflow_ == nullptr) return record;
  // A tracked job deleted before the store was configured has its record in its run.
  absl::StatusOr<api::v1::JobHistory> in_run = mlflow_->DeletedRecord(ns, name, uid);
  return in_run.ok() ? in_run : record;
}

}  // namespace coach::history
