#include "operator/backend/kube/event_recorder.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"  // SleepFor
#include "operator/backend/kube/client/resource.h"
#include "operator/metrics/registry.h"

namespace coach::backend::kube {
namespace {

namespace k8s = ::coach::kubeclient;
using nlohmann::json;

constexpr char kSep = '\x1f';
// client-go's EventAggregatorByReasonMessageFunc prefix, so that tools matching it still do.
constexpr char kCombinedPrefix[] = "(combined from similar events): ";

std::string FormatSeconds(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

std::string TypeOf(const store::JobEvent& e) { return e.type.empty() ? "Normal" : e.type; }

std::string ObjectKey(const EventTarget& t) {
  return absl::StrCat(t.namespace_, std::string(1, kSep), t.uid, std::string(1, kSep), t.kind,
                      std::string(1, kSep), t.name);
}

void Truncate(std::string* s, size_t max) {
  if (s->size() <= max) return;
  s->resize(max >= 3 ? max - 3 : max);
  if (max >= 3) s->append("...");
}

// Worth another try: the API server (or the way to it) was briefly unavailable.
bool Transient(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) || absl::IsInternal(s);
}

// Event names: unique across recorders of this process, even with one frozen test clock.
std::atomic<uint64_t> g_name_seq{0};

}  // namespace

absl::StatusOr<std::unique_ptr<EventRecorder>> EventRecorder::Create(k8s::KubeClient* client,
                                                                     EventRecorderOptions options) {
  if (client == nullptr) return absl::InvalidArgumentError("event recorder: client: required");
  if (!(options.qps > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("event qps: must be > 0, got ", options.qps));
  }
  if (options.burst < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("event burst: must be >= 1, got ", options.burst));
  }
  if (options.max_queued < 1 || options.max_pending_per_object < 1) {
    return absl::InvalidArgumentError("event queue: must hold at least 1");
  }
  if (options.aggregate_max_events < 2) {
    return absl::InvalidArgumentError("event aggregation: needs at least 2 events");
  }
  if (options.max_message_bytes < 64) {
    return absl::InvalidArgumentError("event message limit: must be at least 64 bytes");
  }
  return std::unique_ptr<EventRecorder>(new EventRecorder(client, std::move(options)));
}

EventRecorder::EventRecorder(k8s::KubeClient* client, EventRecorderOptions options)
    : client_(client), options_(std::move(options)), limiter_(options_.qps, options_.burst) {
  sender_ = std::thread([this] { Run(); });
}

EventRecorder::~EventRecorder() { Stop(absl::Seconds(2)); }

absl::Time EventRecorder::Now() const { return options_.clock->Now(); }

bool EventRecorder::Aggregates(const std::string& group, const std::string& message,
                               absl::Time now) {
  auto it = groups_.find(group);
  if (it == groups_.end()) {
    if (groups_.size() >= options_.max_remembered) {
      // Forget the groups past the window; if that is not enough, start afresh (a group then
      // writes up to 9 more single Events before it aggregates again: still bounded).
      for (auto g = groups_.begin(); g != groups_.end();) {
        g = now - g->second.last > options_.aggregate_window ? groups_.erase(g) : std::next(g);
      }
      if (groups_.size() >= options_.max_remembered) groups_.clear();
    }
    it = groups_.emplace(group, Group{}).first;
  }
  Group& g = it->second;
  // As client-go: the window runs from the latest similar event, not the first.
  if (now - g.last > options_.aggregate_window) g.messages.clear();
  g.last = now;
  g.messages.insert(message);
  if (g.messages.size() < options_.aggregate_max_events) return false;
  // client-go pops one so the set stays below the threshold; popping the newcomer keeps the
  // first ones, so that a repeat of one of them still raises that Event's own count.
  g.messages.erase(message);
  return true;
}

bool EventRecorder::Record(const EventTarget& target, const store::JobEvent& event) {
  const absl::Time now = Now();
  std::string message = event.message;
  Truncate(&message, options_.max_message_bytes);
  const absl::Time when = event.time == absl::InfinitePast() ? now : event.time;
  const std::string type = TypeOf(event);
  const std::string object = ObjectKey(target);
  const std::string group =
      absl::StrCat(object, std::string(1, kSep), type, std::string(1, kSep), event.reason);

  absl::MutexLock lock(&mu_);
  if (stopped_) {
    Drop(1, absl::StrCat("recorded after shutdown: ", target.namespace_, "/", target.name, " ",
                         event.reason));
    return false;
  }
  const bool aggregate = Aggregates(group, message, now);
  // An aggregate is one Event per group; any other Event is one per message.
  const std::string key = aggregate ? absl::StrCat(group, std::string(1, kSep), "\x1e")
                                    : absl::StrCat(group, std::string(1, kSep), message);
  if (auto it = by_key_.find(key); it != by_key_.end()) {
    Pending& p = *it->second;
    ++p.count;
    p.first = std::min(p.first, when);
    p.last = std::max(p.last, when);
    if (aggregate && when >= p.last) p.message = std::move(message);  // the latest, as upstream
    ++counts_.recorded;
    Count("recorded", 1);
    return true;
  }
  auto per_object = per_object_.find(object);
  if (per_object != per_object_.end() && per_object->second >= options_.max_pending_per_object) {
    Drop(1, absl::StrCat(target.namespace_, "/", target.name, " has ",
                         options_.max_pending_per_object, " events queued; latest ", event.reason));
    return false;
  }
  if (queue_.size() >= options_.max_queued) {
    Drop(1, absl::StrCat(options_.max_queued, " events queued; latest ", target.namespace_, "/",
                         target.name, " ", event.reason));
    return false;
  }
  queue_.push_back(Pending{target, type, event.reason, std::move(message), when, when, 1, aggregate,
                           key, object, now});
  by_key_[key] = std::prev(queue_.end());
  ++per_object_[object];
  ++counts_.recorded;
  Count("recorded", 1);
  SetQueuedGauge();
  return true;
}

bool EventRecorder::Flush(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queue_.empty() && !writing_; };
  return mu_.AwaitWithTimeout(absl::Condition(&idle), timeout);
}

void EventRecorder::Stop(absl::Duration grace) {
  if (draining_.exchange(true)) return;  // the first Stop does it all
  const absl::Time start = Now();
  {
    absl::MutexLock lock(&mu_);
    uint64_t at_start = 0;
    for (const Pending& p : queue_) at_start += static_cast<uint64_t>(p.count);
    const uint64_t written_before = counts_.written;
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queue_.empty() && !writing_; };
    mu_.AwaitWithTimeout(absl::Condition(&idle), grace);
    // From here on the sender takes nothing more from the queue (it checks abort_ under mu_).
    stopped_ = true;
    abort_ = true;
    if (at_start > 0) {
      spdlog::info("events: wrote {} of {} queued event(s) at shutdown in {}",
                   counts_.written - written_before, at_start, absl::FormatDuration(Now() - start));
    }
    uint64_t left = 0;
    for (const Pending& p : queue_) left += static_cast<uint64_t>(p.count);
    if (left > 0) {
      Drop(left, absl::StrCat("not written within the shutdown grace of ",
                              absl::FormatDuration(grace), " (--kube-event-shutdown-grace)"));
    }
    queue_.clear();
    by_key_.clear();
    per_object_.clear();
    SetQueuedGauge();
  }
  // A write in flight finishes (or fails and is counted) first.
  if (sender_.joinable()) sender_.join();
}

EventRecorder::Counts EventRecorder::counts() const {
  absl::MutexLock lock(&mu_);
  Counts c = counts_;
  for (const Pending& p : queue_) c.queued += static_cast<uint64_t>(p.count);
  return c;
}

void EventRecorder::ExportMetrics(metrics::Registry* registry) {
  metrics::Family* total = registry->Counter(
      "coach_kube_events_total",
      "Job events (occurrences) by outcome: recorded, written (as an Event or a count "
      "increment), combined (written into a \"combined from similar events\" Event), dropped "
      "(over a queue bound or left at shutdown), failed (refused by the API server)",
      {"outcome"});
  metrics::Family* queued =
      registry->Gauge("coach_kube_events_queued", "Job events waiting to be written");
  absl::MutexLock lock(&mu_);
  events_total_ = total;
  events_queued_ = queued;
  // What happened before the export (start-up) counts too.
  for (const auto& [outcome, n] :
       std::initializer_list<std::pair<const char*, uint64_t>>{{"recorded", counts_.recorded},
                                                               {"written", counts_.written},
                                                               {"combined", counts_.combined},
                                                               {"dropped", counts_.dropped},
                                                               {"failed", counts_.failed}}) {
    total->Add({outcome}, static_cast<double>(n));
  }
  SetQueuedGauge();
}

void EventRecorder::Count(const char* outcome, uint64_t n) {
  if (events_total_ != nullptr) events_total_->Add({outcome}, static_cast<double>(n));
}

void EventRecorder::SetQueuedGauge() {
  if (events_queued_ == nullptr) return;
  uint64_t n = 0;
  for (const Pending& p : queue_) n += static_cast<uint64_t>(p.count);
  events_queued_->Set({}, static_cast<double>(n));
}

void EventRecorder::Drop(uint64_t n, const std::string& detail) {
  const uint64_t before = counts_.dropped;
  counts_.dropped += n;
  Count("dropped", n);
  // The first drop, then one line per 100 (and every bulk drop): a flood must not flood the
  // log, and every line carries the running total.
  if (before == 0 || n > 1 || before / 100 != counts_.dropped / 100) {
    spdlog::warn("events: {} dropped ({} so far): {}", n, counts_.dropped, detail);
  }
}

void EventRecorder::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || abort_.load();
      };
      // Stop sets abort_ under mu_, which re-evaluates the condition: no polling needed.
      mu_.Await(absl::Condition(&ready));
      if (abort_.load()) return;
      if (options_.busy && !draining_.load() &&
          Now() - queue_.front().queued < options_.max_defer) {
        mu_.Unlock();
        const bool busy = options_.busy();
        if (busy) absl::SleepFor(absl::Milliseconds(20));
        mu_.Lock();
        if (busy) continue;
      }
    }
    // At shutdown the budget is off: the controller has stopped, nothing competes.
    if (!draining_.load()) limiter_.Wait(absl::InfiniteFuture(), &draining_);
    Pending p;
    {
      absl::MutexLock lock(&mu_);
      if (abort_.load()) return;
      p = std::move(queue_.front());
      queue_.pop_front();
      by_key_.erase(p.key);
      auto per_object = per_object_.find(p.object_key);
      if (per_object != per_object_.end() && --per_object->second == 0) {
        per_object_.erase(per_object);
      }
      writing_ = true;  // Flush must not see "idle" while p is being written
      SetQueuedGauge();
    }
    Write(p);
    absl::MutexLock lock(&mu_);
    writing_ = false;
  }
}

void EventRecorder::Write(const Pending& p) {
  // Stable across the retries: AlreadyExists on a retry means the earlier try got through.
  const uint64_t suffix = static_cast<uint64_t>(absl::ToUnixNanos(Now())) + g_name_seq.fetch_add(1);
  const std::string name = absl::StrFormat("%s.%016x", p.target.name.substr(0, 236), suffix);
  absl::Status status;
  bool patched = false;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (attempt > 0) {
      if (abort_.load()) break;
      absl::SleepFor(attempt == 1 ? absl::Milliseconds(200) : absl::Seconds(1));
    }
    auto it = remembered_.find(p.key);
    if (it != remembered_.end() && p.last - it->second.last <= options_.repeat_window) {
      const int64_t count = it->second.count + p.count;
      json patch = {{"count", count}, {"lastTimestamp", FormatSeconds(p.last)}};
      if (p.aggregate) {
        std::string message = absl::StrCat(kCombinedPrefix, p.message);
        Truncate(&message, options_.max_message_bytes);
        patch["message"] = message;
      }
      absl::StatusOr<json> done = client_->Patch(k8s::resources::Events(), p.target.namespace_,
                                                 it->second.name, k8s::PatchType::kMerge, patch);
      status = done.status();
      if (!absl::IsNotFound(status)) {
        patched = true;
        if (status.ok()) {
          it->second.count = count;
          it->second.last = std::max(it->second.last, p.last);
        }
        if (status.ok() || !Transient(status)) break;
        continue;
      }
      // Expired (--event-ttl) or deleted: a new one.
    }
    if (it != remembered_.end()) remembered_.erase(it);
    patched = false;
    std::string message = p.aggregate ? absl::StrCat(kCombinedPrefix, p.message) : p.message;
    Truncate(&message, options_.max_message_bytes);
    const EventTarget& t = p.target;
    json object = {
        {"apiVersion", "v1"},
        {"kind", "Event"},
        {"metadata", {{"name", name}, {"namespace", t.namespace_}}},
        {"involvedObject",
         {{"apiVersion", t.api_version},
          {"kind", t.kind},
          {"name", t.name},
          {"namespace", t.namespace_},
          {"uid", t.uid}}},
        {"reason", p.reason},
        {"message", message},
        {"type", p.type},
        {"firstTimestamp", FormatSeconds(p.first)},
        {"lastTimestamp", FormatSeconds(p.last)},
        {"count", p.count},
        {"source", {{"component", options_.component}}},
    };
    status = client_->Create(k8s::resources::Events(), t.namespace_, object).status();
    if (attempt > 0 && absl::IsAlreadyExists(status)) status = absl::OkStatus();
    if (status.ok()) Remember(p.key, {name, p.count, p.last});
    if (status.ok() || !Transient(status)) break;
  }
  const uint64_t n = static_cast<uint64_t>(p.count);
  absl::MutexLock lock(&mu_);
  if (!status.ok()) {
    counts_.failed += n;
    Count("failed", n);
    spdlog::warn("events: {} occurrence(s) of {} for {}/{} not written ({} failed so far): {}", n,
                 p.reason, p.target.namespace_, p.target.name, counts_.failed, status.ToString());
    return;
  }
  ++(patched ? counts_.patched : counts_.created);
  counts_.written += n;
  Count("written", n);
  if (p.aggregate) {
    counts_.combined += n;
    Count("combined", n);
  }
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
