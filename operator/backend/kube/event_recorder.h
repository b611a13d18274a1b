#pragma once

// EventRecorder: writes core/v1 Events for jobs off the reconcile path, the way client-go's
// event broadcaster and EventCorrelator do, so that Events never slow down creating pods and
// services and an ordinary job's Events read exactly as upstream's.
//
// - One Event per occurrence, as upstream: a 3-replica job gets 3 "Created pod" Events.
// - Aggregation exactly where client-go aggregates (tools/record/events_cache.go,
//   EventAggregator): per object, type and reason, once aggregate_max_events (10) distinct
//   messages were seen with less than aggregate_window (10 min) between one and the next, that
//   occurrence and the later ones go into one Event, "(combined from similar events): <the
//   latest message>", whose count grows. So 12 similar events are 9 Events plus one with
//   count 3. This happens whatever the load: it is the rule, not a reaction to pressure.
// - Repeats (same object, type, reason and message) are one Event whose count grows: a merge
//   PATCH of count and lastTimestamp (client-go's eventLogger), or, while still queued, one
//   queued entry whose count grows.
// - Not client-go's spam filter (25 Events per object, then one per 5 min, the rest dropped
//   silently): a 16-replica job would lose its last Created events. Here nothing is dropped
//   for being many; the two rules above already bound what one job can queue.
// - Bounded memory per job, not one global queue: a job holds at most max_pending_per_object
//   queued entries (by the rules above it needs about 10 per reason), all jobs together at
//   most max_queued. An occurrence beyond either bound is dropped, counted (counts().dropped,
//   the coach_kube_events_total{outcome="dropped"} metric) and logged with the count.
// - Rate: one sender thread, its own token bucket (qps, burst) inside the client's limiter:
//   Events are the operator's least important writes.
// - Yielding: with `busy` set, the sender holds events while it answers true (the operator is
//   creating pods and services), each at most max_defer after it was recorded. Held events
//   are only delayed, never combined.
// - Shutdown: Stop(grace) writes what is queued without the event budget (the controller has
//   stopped, nothing competes) for up to `grace`; what is left is counted and logged.
// - A failed write is retried twice when the API server was unavailable; then it is counted
//   (counts().failed, outcome="failed") and logged. The API server expires Events
//   (--event-ttl, 1 h by default).
//
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/kube/client/kube_client.h"
#include "operator/backend/kube/client/rate_limiter.h"
#include "operator/store/job_store.h"

namespace coach::metrics {
class Family;
class Registry;
}  // namespace coach::metrics

namespace coach::backend::kube {

// The object an Event is about (involvedObject).
struct EventTarget {
  std::string namespace_;
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
};

struct EventRecorderOptions {
  // The event budget (--kube-event-qps, --kube-event-burst; see docs/operator.md for why).
  double qps = 50;
  int burst = 100;
  size_t max_message_bytes = 1024;
  std::string component = "coach-operator";  // source.component
  // client-go's EventAggregator (defaultAggregateMaxEvents, defaultAggregateIntervalInSeconds).
  size_t aggregate_max_events = 10;
  absl::Duration aggregate_window = absl::Minutes(10);
  // A repeat of an Event written this long ago or less raises its count.
  absl::Duration repeat_window = absl::Minutes(10);
  size_t max_remembered = 4096;  // written Events and aggregation groups remembered (each)
  // Queued entries (a repeat or an aggregated occurrence joins its entry: no new one).
  size_t max_pending_per_object = 256;
  size_t max_queued = 50000;
  // Optional: while it answers true, events wait (see the header comment).
  std::function<bool()> busy;
  absl::Duration max_defer = absl::Seconds(30);
  // The clock of event times and windows. Not owned.
  ::coach::Clock* clock = ::coach::Clock::Real();
};

class EventRecorder {
 public:
  // Occurrences unless said otherwise.
  struct Counts {
    uint64_t recorded = 0;  // accepted by Record
    uint64_t written = 0;   // written, as a new Event or a count increment
    uint64_t created = 0;   // Event objects created (requests)
    uint64_t patched = 0;   // count increments of an existing Event (requests)
    uint64_t combined = 0;  // written into a "(combined from similar events)" Event
    uint64_t dropped = 0;   // over a queue bound, recorded after Stop, or left at Stop
    uint64_t failed = 0;    // refused by the API server
    uint64_t queued = 0;    // waiting now
  };

  // `client` is not owned and must outlive the recorder. InvalidArgument: options.
  static absl::StatusOr<std::unique_ptr<EventRecorder>> Create(
      ::coach::kubeclient::KubeClient* client, EventRecorderOptions options);
  ~EventRecorder();  // Stop(absl::Seconds(2))
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // Queues one occurrence; never waits for the API server. False: dropped (a queue bound, or
  // stopped), counted and logged.
  bool Record(const EventTarget& target, const store::JobEvent& event);
  // Waits until nothing is queued or being written. False when `timeout` passed first.
  bool Flush(absl::Duration timeout);
  // Writes what is queued, without the event budget and without waiting for `busy`, for up
  // to `grace`; then counts and logs what is left as dropped and joins the sender. A write in
  // flight at the deadline is let finish (the client's request timeout bounds it).
  // Records after Stop are dropped. Idempotent.
  void Stop(absl::Duration grace);
  Counts counts() const;

  // Exports the counts as coach_kube_events_total{outcome} (recorded, written, combined,
  // dropped, failed) and coach_kube_events_queued; `registry` must outlive the recorder.
  void ExportMetrics(::coach::metrics::Registry* registry);

 private:
  // One queued Event: an occurrence, its repeats while queued, or an aggregate's occurrences.
  struct Pending {
    EventTarget target;
    std::string type;
    std::string reason;
    std::string message;
    absl::Time first;
    absl::Time last;
    int64_t count = 0;
    bool aggregate = false;
    std::string key;         // the Event's identity (see Write)
    std::string object_key;  // the job
    absl::Time queued;
  };
  struct Remembered {
    std::string name;  // the Event object's name
    int64_t count = 0;
    absl::Time last;
  };
  struct Group {  // client-go's aggregateRecord
    std::set<std::string> messages;
    absl::Time last;
  };

  EventRecorder(::coach::kubeclient::KubeClient* client, EventRecorderOptions options);
  absl::Time Now() const;
  void Run();
  void Write(const Pending& p);
  bool Patch(const Pending& p);
  void CreateEvent(const Pending& p);
  void Remember(const std::string& key, Remembered value);
  // Whether this occurrence goes into its group's aggregate (updates the group).
  bool Aggregates(const std::string& group, const std::string& message, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts `n` dropped occurrences and logs them (the first, one line per 100, every bulk).
  void Drop(uint64_t n, const std::string& detail) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Count(const char* outcome, uint64_t n) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetQueuedGauge() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  ::coach::kubeclient::KubeClient* const client_;
  const EventRecorderOptions options_;
  ::coach::kubeclient::TokenBucketRateLimiter limiter_;
  std::atomic<bool> draining_{false};  // Stop began: no budget, no yielding
  std::atomic<bool> abort_{false};     // Stop's grace is over

  mutable absl::Mutex mu_;
  std::list<Pending> queue_ ABSL_GUARDED_BY(mu_);  // in the order recorded
  std::map<std::string, std::list<Pending>::iterator> by_key_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, size_t> per_object_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Group> groups_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  Counts counts_ ABSL_GUARDED_BY(mu_);
  ::coach::metrics::Family* events_total_ ABSL_GUARDED_BY(mu_) = nullptr;
  ::coach::metrics::Family* events_queued_ ABSL_GUARDED_BY(mu_) = nullptr;
  // Sender thread only.
  std::map<std::string, Remembered> remembered_;
  std::thread sender_;
};

}  // namespace coach::backend::kube
