#include "operator/backend/kube/event_recorder.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "operator/backend/kube/client/resource.h"

namespace coach::backend::kube {
namespace {

namespace k8s = ::coach::kube;
using nlohmann::json;

std::string FormatSeconds(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

absl::Time WhenOf(const local::JobEvent& e) {
  return e.time == absl::InfinitePast() ? absl::Now() : e.time;
}

// Events that may be combined into one: same object, type and reason.
std::string GroupKey(const EventTarget& t, const local::JobEvent& e) {
  return absl::StrCat(t.namespace_, "\x1f", t.uid, "\x1f", t.kind, "\x1f", t.name, "\x1f", e.type,
                      "\x1f", e.reason);
}

std::string TypeOf(const local::JobEvent& e) { return e.type.empty() ? "Normal" : e.type; }

void Truncate(std::string* s, size_t max) {
  if (s->size() <= max) return;
  s->resize(max >= 3 ? max - 3 : max);
  if (max >= 3) s->append("...");
}

}  // namespace

absl::StatusOr<std::unique_ptr<EventRecorder>> EventRecorder::Create(k8s::KubeClient* client,
                                                                     EventRecorderOptions options) {
  if (client == nullptr) return absl::InvalidArgumentError("event recorder: client: required");
  if (!(options.qps > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("event qps: must be > 0, got ", options.qps));
  }
  if (options.burst < 1) {
    return absl::InvalidArgumentError(absl::StrCat("event burst: must be >= 1, got ", options.burst));
  }
  if (options.max_queued < 1) return absl::InvalidArgumentError("event queue: must hold at least 1");
  if (options.max_message_bytes < 16) {
    return absl::InvalidArgumentError("event message limit: must be at least 16 bytes");
  }
  return std::unique_ptr<EventRecorder>(new EventRecorder(client, std::move(options)));
}

EventRecorder::EventRecorder(k8s::KubeClient* client, EventRecorderOptions options)
    : client_(client), options_(std::move(options)), limiter_(options_.qps, options_.burst) {
  sender_ = std::thread([this] { Run(); });
}

EventRecorder::~EventRecorder() { Stop(absl::Seconds(2)); }

bool EventRecorder::Record(const EventTarget& target, const local::JobEvent& event) {
  absl::MutexLock lock(&mu_);
  local::JobEvent e = event;
  if (e.time == absl::InfinitePast()) e.time = absl::Now();
  if (!stopping_ && queue_.size() >= options_.max_queued) {
    // Full: fold into a queued event of the same group (the newest first: most likely a match).
    const std::string group = GroupKey(target, e);
    for (auto it = queue_.rbegin(); it != queue_.rend(); ++it) {
      if (GroupKey(it->target, it->event) == group) {
        it->folded.push_back(std::move(e));
        return true;
      }
    }
  }
  if (stopping_ || queue_.size() >= options_.max_queued) {
    const uint64_t dropped = ++counts_.dropped;
    // The first drop and then every 100th: a flood must not flood the log too.
    if (dropped == 1 || dropped % 100 == 0) {
      spdlog::warn("events: {} dropped so far (queue of {} full); latest: {}/{} {}", dropped,
                   options_.max_queued, target.namespace_, target.name, event.reason);
    }
    return false;
  }
  queue_.push_back({target, std::move(e), absl::Now(), {}});
  return true;
}

bool EventRecorder::Flush(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queue_.empty() && !writing_; };
  return mu_.AwaitWithTimeout(absl::Condition(&idle), timeout);
}

void EventRecorder::Stop(absl::Duration timeout) {
  {
    absl::MutexLock lock(&mu_);
    if (!sender_.joinable()) return;
    stopping_ = true;
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queue_.empty() && !writing_; };
    mu_.AwaitWithTimeout(absl::Condition(&idle), timeout);
  }
  abort_ = true;
  sender_.join();
  absl::MutexLock lock(&mu_);
  if (!queue_.empty()) {
    counts_.dropped += queue_.size();
    spdlog::warn("events: {} not written at shutdown", queue_.size());
    queue_.clear();
  }
}

EventRecorder::Counts EventRecorder::counts() const {
  absl::MutexLock lock(&mu_);
  return counts_;
}

void EventRecorder::Run() {
  bool held = false;  // the front waited for `busy`: combine, as under the rate limit
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || abort_.load() || stopping_;
      };
      // Polls abort_ (set without the lock) at least every 100 ms.
      while (!mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(100))) {
      }
      if (abort_.load() || (stopping_ && queue_.empty())) return;
      if (options_.busy && !stopping_ && absl::Now() - queue_.front().queued < options_.max_defer) {
        mu_.Unlock();
        const bool busy = options_.busy();
        if (busy) absl::SleepFor(absl::Milliseconds(20));
        mu_.Lock();
        if (busy) {
          held = true;
          continue;
        }
      }
      writing_ = true;  // the front is taken below; Flush must not see "idle" meanwhile
    }
    // Waiting for a token means the queue outruns the budget: combine what is waiting.
    const bool got_token = limiter_.TryAccept();
    const bool throttled = !got_token || std::exchange(held, false);
    if (!got_token && !limiter_.Wait(absl::InfiniteFuture(), &abort_)) {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      return;
    }
    std::vector<Pending> batch;
    {
      absl::MutexLock lock(&mu_);
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
      if (throttled) {
        const std::string group = GroupKey(batch.front().target, batch.front().event);
        for (auto it = queue_.begin(); it != queue_.end();) {
          if (GroupKey(it->target, it->event) == group) {
            batch.push_back(std::move(*it));
            it = queue_.erase(it);
          } else {
            ++it;
          }
        }
      }
    }
    Write(batch);
    absl::MutexLock lock(&mu_);
    writing_ = false;
  }
}

void EventRecorder::Write(const std::vector<Pending>& pending) {
  // One entry per occurrence: folded events count as queued ones.
  std::vector<Pending> batch;
  for (const Pending& p : pending) {
    batch.push_back({p.target, p.event, p.queued, {}});
    for (const local::JobEvent& e : p.folded) batch.push_back({p.target, e, p.queued, {}});
  }
  const Pending& first = batch.front();
  if (batch.size() == 1) {
    const std::string key = absl::StrCat(GroupKey(first.target, first.event), "\x1f", first.event.message);
    if (Patch(first, key)) return;
    CreateEvent(batch, key);
    return;
  }
  CreateEvent(batch, "");
}

// A repeat of an Event written within the window: count + 1 on that object.
bool EventRecorder::Patch(const Pending& p, const std::string& key) {
  auto it = remembered_.find(key);
  if (it == remembered_.end()) return false;
  const absl::Time when = WhenOf(p.event);
  if (when - it->second.last > options_.repeat_window) {
    remembered_.erase(it);
    return false;
  }
  const int64_t count = it->second.count + 1;
  json patch = {{"count", count}, {"lastTimestamp", FormatSeconds(when)}};
  absl::StatusOr<json> patched = client_->Patch(k8s::resources::Events(), p.target.namespace_, it->second.name,
                                                k8s::PatchType::kMerge, patch);
  if (absl::IsNotFound(patched.status())) {  // expired (--event-ttl) or deleted: a new one
    remembered_.erase(it);
    return false;
  }
  absl::MutexLock lock(&mu_);
  if (!patched.ok()) {
    ++counts_.failed;
    spdlog::warn("event {} of {}/{} not written: {}", p.event.reason, p.target.namespace_, p.target.name,
                 patched.status().ToString());
    return true;
  }
  it->second.count = count;
  it->second.last = when;
  ++counts_.repeated;
  return true;
}

void EventRecorder::CreateEvent(const std::vector<Pending>& batch, const std::string& key) {
  const Pending& first = batch.front();
  const EventTarget& t = first.target;
  std::string message;
  if (batch.size() == 1) {
    message = first.event.message;
  } else {
    message = absl::StrCat("(combined from ", batch.size(), " similar events) ");
    for (size_t i = 0; i < batch.size() && message.size() <= options_.max_message_bytes; ++i) {
      absl::StrAppend(&message, i == 0 ? "" : "; ", batch[i].event.message);
    }
  }
  Truncate(&message, options_.max_message_bytes);
  absl::Time first_time = WhenOf(first.event), last_time = first_time;
  for (const Pending& p : batch) {
    first_time = std::min(first_time, WhenOf(p.event));
    last_time = std::max(last_time, WhenOf(p.event));
  }
  // Unique and ordered within an object: time in nanoseconds plus a process-wide sequence.
  const uint64_t suffix = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())) + name_seq_.fetch_add(1);
  const std::string name = absl::StrFormat("%s.%016x", t.name.substr(0, 236), suffix);
  json object = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", name}, {"namespace", t.namespace_}}},
      {"involvedObject",
       {{"apiVersion", t.api_version}, {"kind", t.kind}, {"name", t.name}, {"namespace", t.namespace_}, {"uid", t.uid}}},
      {"reason", first.event.reason},
      {"message", message},
      {"type", TypeOf(first.event)},
      {"firstTimestamp", FormatSeconds(first_time)},
      {"lastTimestamp", FormatSeconds(last_time)},
      {"count", static_cast<int64_t>(batch.size())},
      {"source", {{"component", options_.component}}},
  };
  absl::StatusOr<json> created = client_->Create(k8s::resources::Events(), t.namespace_, object);
  if (created.ok() && !key.empty()) Remember(key, {name, 1, last_time});
  absl::MutexLock lock(&mu_);
  if (!created.ok()) {
    counts_.failed += batch.size();
    spdlog::warn("event {} of {}/{} not written: {}", first.event.reason, t.namespace_, t.name,
                 created.status().ToString());
    return;
  }
  ++counts_.created;
  if (batch.size() > 1) counts_.combined += batch.size();
}

void EventRecorder::Remember(const std::string& key, Remembered value) {
  if (remembered_.size() >= options_.max_remembered) {
    // Forget what left the window; if that is not enough, start afresh (a repeat then
    // becomes a new Event, which is still correct).
    const absl::Time cutoff = value.last - options_.repeat_window;
    for (auto it = remembered_.begin(); it != remembered_.end();) {
      it = it->second.last < cutoff ? remembered_.erase(it) : std::next(it);
    }
    if (remembered_.size() >= options_.max_remembered) remembered_.clear();
  }
  remembered_[key] = std::move(value);
}

}  // namespace coach::backend::kube
