#include "integrations/mlflow/metric_logger.h"

#include <cstdio>
#include <random>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace coach::mlflow {

namespace {
std::chrono::nanoseconds Chrono(absl::Duration d) {
  return absl::ToChronoNanoseconds(std::max(d, absl::ZeroDuration()));
}
}  // namespace

absl::StatusOr<std::unique_ptr<MetricLogger>> MetricLogger::Create(TrackingClient* client,
                                                                   std::string run_id,
                                                                   MetricLoggerOptions options) {
  if (client == nullptr) return absl::InvalidArgumentError("MetricLogger: client is null");
  if (run_id.empty()) return absl::InvalidArgumentError("MetricLogger: run_id is empty");
  if (options.max_buffered_points < 1)
    return absl::InvalidArgumentError("max_buffered_points must be >= 1");
  if (options.max_batch_points < 1 || options.max_batch_points > kMaxMetricsPerBatch) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch_points must be in [1, ", kMaxMetricsPerBatch, "]"));
  }
  if (options.senders < 1 || options.senders > 64)
    return absl::InvalidArgumentError("senders must be in [1, 64]");
  std::unique_ptr<MetricLogger> logger(
      new MetricLogger(client, std::move(run_id), std::move(options)));
  if (!logger->options_.spill_path.empty()) {
    logger->spill_.open(logger->options_.spill_path,
                        std::ios::in | std::ios::out | std::ios::trunc | std::ios::binary);
    if (!logger->spill_.is_open()) {
      return absl::InvalidArgumentError(
          absl::StrCat("MetricLogger: cannot open spill file ", logger->options_.spill_path));
    }
  }
  for (int i = 0; i < logger->options_.senders; ++i) {
    logger->senders_.emplace_back([raw = logger.get()] { raw->SenderLoop(); });
  }
  return logger;
}

MetricLogger::MetricLogger(TrackingClient* client, std::string run_id, MetricLoggerOptions options)
    : client_(client), run_id_(std::move(run_id)), options_(std::move(options)) {
  pending_.reserve(options_.max_batch_points * 2);
  swap_.reserve(options_.max_batch_points * 2);
  backoff_ = options_.initial_backoff;
  retry_not_before_ = absl::InfinitePast();
}

MetricLogger::~MetricLogger() { Shutdown(absl::Seconds(5)); }

bool MetricLogger::Log(absl::string_view key, double value, int64_t step, int64_t timestamp_ms) {
  if (buffered_.load(std::memory_order_relaxed) >= options_.max_buffered_points) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  bool wake;
  {
    std::lock_guard<std::mutex> lock(log_mu_);
    if (closed_) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    pending_.push_back(Metric{std::string(key), value, timestamp_ms, step});
    ++accepted_;
    // Once per batch: a notify costs a futex call, too much for every point.
    wake = pending_.size() == static_cast<size_t>(options_.max_batch_points);
  }
  buffered_.fetch_add(1, std::memory_order_relaxed);
  if (wake) work_cv_.notify_one();
  return true;
}

bool MetricLogger::Log(absl::string_view key, double value, int64_t step) {
  return Log(key, value, step, absl::ToUnixMillis(options_.clock->Now()));
}

void MetricLogger::Resolve(int64_t n) {
  buffered_.fetch_sub(n, std::memory_order_relaxed);
  resolved_.fetch_add(n, std::memory_order_release);
}

// Spill record: u16 key length, key, f64 value, i64 timestamp, i64 step.
void MetricLogger::MaybeSpillLocked() {
  if (!spill_.is_open()) return;
  {
    std::lock_guard<std::mutex> lock(log_mu_);
    swap_.swap(pending_);
  }
  for (Metric& m : swap_) outbox_.push_back(std::move(m));
  swap_.clear();
  if (outbox_.size() < static_cast<size_t>(options_.max_batch_points)) return;
  spill_.clear();
  spill_.seekp(0, std::ios::end);
  int64_t n = 0, over = 0;
  for (const Metric& m : outbox_) {
    if (spilled_ + n >= options_.max_spill_points) {
      ++over;
      continue;
    }
    uint16_t len = static_cast<uint16_t>(std::min<size_t>(m.key.size(), 65535));
    spill_.write(reinterpret_cast<const char*>(&len), sizeof len);
    spill_.write(m.key.data(), len);
    spill_.write(reinterpret_cast<const char*>(&m.value), sizeof m.value);
    spill_.write(reinterpret_cast<const char*>(&m.timestamp_ms), sizeof m.timestamp_ms);
    spill_.write(reinterpret_cast<const char*>(&m.step), sizeof m.step);
    ++n;
  }
  spill_.flush();
  if (!spill_.good()) {
    // Disk full or similar: keep the points in memory (the bound still applies to Log).
    spdlog::warn("mlflow: spill file {} not writable; keeping the backlog in memory",
                 options_.spill_path);
    spill_.close();
    return;
  }
  spilled_ += n;
  outbox_.clear();
  // On disk now: no longer held against the in-memory bound, but not resolved either.
  buffered_.fetch_sub(n + over, std::memory_order_relaxed);
  if (over > 0) {
    dropped_.fetch_add(over, std::memory_order_relaxed);
    resolved_.fetch_add(over, std::memory_order_release);
  }
}

std::vector<Metric> MetricLogger::TakeBatch() {
  std::unique_lock<std::mutex> lock(mu_);
  bool waited = false;
  for (;;) {
    if (stopping_) return {};
    absl::Time now = options_.clock->Now();
    if (now < retry_not_before_) {
      // Server unavailable: wait out the backoff; move the backlog to disk as it grows.
      work_cv_.wait_for(lock, Chrono(retry_not_before_ - now));
      MaybeSpillLocked();
      continue;
    }
    std::vector<Metric> batch;
    const size_t max = options_.max_batch_points;
    if (spilled_ > 0) {
      // Oldest first: what went to disk during an outage.
      spill_.clear();
      spill_.seekg(spill_read_pos_);
      while (batch.size() < max && spilled_ > 0) {
        Metric m;
        uint16_t len = 0;
        spill_.read(reinterpret_cast<char*>(&len), sizeof len);
        m.key.resize(len);
        spill_.read(m.key.data(), len);
        spill_.read(reinterpret_cast<char*>(&m.value), sizeof m.value);
        spill_.read(reinterpret_cast<char*>(&m.timestamp_ms), sizeof m.timestamp_ms);
        spill_.read(reinterpret_cast<char*>(&m.step), sizeof m.step);
        if (!spill_.good()) break;
        batch.push_back(std::move(m));
        --spilled_;
      }
      spill_read_pos_ = spill_.good() ? static_cast<int64_t>(spill_.tellg()) : spill_read_pos_;
      if (!spill_.good()) {  // unreadable tail: count it rather than spin
        dropped_.fetch_add(spilled_, std::memory_order_relaxed);
        resolved_.fetch_add(spilled_, std::memory_order_release);
        spilled_ = 0;
      }
      if (spilled_ == 0) {
        spill_.close();
        spill_.open(options_.spill_path,
                    std::ios::in | std::ios::out | std::ios::trunc | std::ios::binary);
        spill_read_pos_ = 0;
      }
      buffered_.fetch_add(static_cast<int64_t>(batch.size()), std::memory_order_relaxed);
      if (!batch.empty()) return batch;
    }
    if (outbox_.size() < max) {
      {
        std::lock_guard<std::mutex> log_lock(log_mu_);
        swap_.swap(pending_);
      }
      for (Metric& m : swap_) outbox_.push_back(std::move(m));
      swap_.clear();
    }
    bool urgent = flush_waiters_ > 0 || outbox_.size() >= max || waited;
    if (!outbox_.empty() && urgent) {
      size_t n = std::min(max, outbox_.size());
      batch.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(outbox_.front()));
        outbox_.pop_front();
      }
      return batch;
    }
    work_cv_.wait_for(lock, Chrono(options_.max_batch_delay));
    waited = true;
  }
}

absl::Status MetricLogger::Send(std::vector<Metric>& batch) {
  // Keys the server would refuse are refused here, alone, instead of failing their batch.
  size_t kept = 0;
  int64_t bad = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!ValidateKey(batch[i].key).ok()) {
      ++bad;
      continue;
    }
    if (kept != i) batch[kept] = std::move(batch[i]);
    ++kept;
  }
  batch.resize(kept);
  if (bad > 0) {
    rejected_.fetch_add(bad, std::memory_order_relaxed);
    Resolve(bad);
  }
  if (batch.empty()) return absl::OkStatus();

  absl::Status s = client_->LogBatch(run_id_, batch, {}, {});
  const int64_t n = static_cast<int64_t>(batch.size());
  if (s.ok()) {
    delivered_.fetch_add(n, std::memory_order_relaxed);
    Resolve(n);
    batch.clear();
    return s;
  }
  if (IsTransient(s)) {
    failed_attempts_.fetch_add(1, std::memory_order_relaxed);
    return s;
  }
  if (absl::IsInvalidArgument(s) && n > 1) {
    // Narrow down the offending points.
    std::vector<Metric> right(std::make_move_iterator(batch.begin() + n / 2),
                              std::make_move_iterator(batch.end()));
    batch.resize(n / 2);
    absl::Status left_status = Send(batch);
    if (!left_status.ok()) {
      for (Metric& m : right) batch.push_back(std::move(m));
      return left_status;
    }
    absl::Status right_status = Send(right);
    batch = std::move(right);
    return right_status;
  }
  spdlog::warn("mlflow: run {}: {} metric point(s) rejected: {}", run_id_, n,
               std::string(s.message()));
  rejected_.fetch_add(n, std::memory_order_relaxed);
  Resolve(n);
  batch.clear();
  return absl::OkStatus();
}

void MetricLogger::Requeue(std::vector<Metric> batch) {
  // Caller holds mu_.
  for (auto it = batch.rbegin(); it != batch.rend(); ++it) outbox_.push_front(std::move(*it));
}

void MetricLogger::SenderLoop() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  for (;;) {
    std::vector<Metric> batch = TakeBatch();
    if (batch.empty()) return;
    absl::Status s = Send(batch);
    std::lock_guard<std::mutex> lock(mu_);
    if (!s.ok()) {
      Requeue(std::move(batch));
      double jitter = std::uniform_real_distribution<double>(0.5, 1.0)(rng);
      retry_not_before_ = options_.clock->Now() + backoff_ * jitter;
      backoff_ = std::min(backoff_ * 2, options_.max_backoff);
      MaybeSpillLocked();
    } else {
      backoff_ = options_.initial_backoff;
    }
    // Under mu_, so that a Flush between its check and its wait cannot miss this.
    resolved_cv_.notify_all();
  }
}

absl::Status MetricLogger::Flush(absl::Duration timeout) {
  int64_t target;
  {
    std::lock_guard<std::mutex> lock(log_mu_);
    target = accepted_;
  }
  std::unique_lock<std::mutex> lock(mu_);
  ++flush_waiters_;
  work_cv_.notify_all();
  bool done = resolved_cv_.wait_for(lock, Chrono(timeout), [&] {
    return stopping_ || resolved_.load(std::memory_order_acquire) >= target;
  });
  --flush_waiters_;
  int64_t left = target - resolved_.load(std::memory_order_acquire);
  if (done && left <= 0) return absl::OkStatus();
  return absl::DeadlineExceededError(
      absl::StrCat("MLflow metrics: ", left, " point(s) not yet delivered to run ", run_id_));
}

MetricLoggerStats MetricLogger::stats() const {
  MetricLoggerStats s;
  auto* self = const_cast<MetricLogger*>(this);
  {
    std::lock_guard<std::mutex> lock(self->log_mu_);
    s.accepted = accepted_;
  }
  {
    std::lock_guard<std::mutex> lock(self->mu_);
    s.spilled = spilled_;
    s.lost_at_shutdown = lost_at_shutdown_;
  }
  s.delivered = delivered_.load(std::memory_order_relaxed);
  s.dropped = dropped_.load(std::memory_order_relaxed);
  s.rejected = rejected_.load(std::memory_order_relaxed);
  s.buffered = std::max<int64_t>(0, buffered_.load(std::memory_order_relaxed));
  s.failed_attempts = failed_attempts_.load(std::memory_order_relaxed);
  return s;
}

MetricLoggerStats MetricLogger::Shutdown(absl::Duration timeout) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_) return final_stats_;
  }
  absl::Status flushed = Flush(timeout);
  {
    std::lock_guard<std::mutex> lock(log_mu_);
    closed_ = true;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  resolved_cv_.notify_all();
  for (std::thread& t : senders_) {
    if (t.joinable()) t.join();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t left;
    {
      std::lock_guard<std::mutex> log_lock(log_mu_);
      left = static_cast<int64_t>(pending_.size());
      pending_.clear();
    }
    left += static_cast<int64_t>(outbox_.size()) + spilled_;
    outbox_.clear();
    spilled_ = 0;
    lost_at_shutdown_ = left;
    buffered_.store(0, std::memory_order_relaxed);
    if (spill_.is_open()) {
      spill_.close();
      std::remove(options_.spill_path.c_str());
    }
  }
  MetricLoggerStats s = stats();
  if (s.undelivered() == 0) {
    spdlog::info("mlflow: run {}: {} metric point(s) delivered", run_id_, s.delivered);
  } else {
    spdlog::warn(
        "mlflow: run {}: {} of {} metric point(s) not delivered ({} dropped: buffer full, {} "
        "rejected "
        "by the server, {} still buffered at shutdown: {})",
        run_id_, s.undelivered(), s.accepted + s.dropped, s.dropped, s.rejected, s.lost_at_shutdown,
        std::string(flushed.message()));
    if (!options_.loss_tag.empty()) {
      absl::Status tagged =
          client_->SetTag(run_id_, options_.loss_tag, absl::StrCat(s.undelivered()));
      if (!tagged.ok())
        spdlog::warn("mlflow: run {}: could not record the loss tag: {}", run_id_,
                     std::string(tagged.message()));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  shut_down_ = true;
  final_stats_ = s;
  return s;
}

}  // namespace coach::mlflow
