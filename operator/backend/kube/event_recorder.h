#pragma once

// EventRecorder: writes core/v1 Events for jobs off the reconcile path, the way client-go's
// event broadcaster does, so that Events never slow down creating pods and services.
//
// - Record() only queues (bounded: max_queued). When the queue is full, an event joins a queued
//   one of the same object, type and reason (they will be written as one combined Event);
//   only when there is none is it dropped and counted (client-go drops on a full channel).
//   One sender thread writes them in order.
// - Its own token bucket (qps, burst) on top of the client's limiter: Events are the
//   operator's least important requests, so a burst of jobs (16 Events for an 8-replica job)
//   must not double the API server's work while pods wait to be created.
// - Combining under pressure: when the sender has to wait for a token, every queued event for
//   the same object, type and reason is written as one Event (count = how many, message
//   "(combined from N similar events) m1; m2; ...", first/lastTimestamp spanning them). A
//   quiet cluster sees one Event per occurrence, exactly as upstream records them.
// - Yielding: with `busy` set, the sender holds events while it answers true (the operator is
//   creating objects), each for at most max_defer after it was recorded; held events are
//   combined as above. Events then never compete with a burst of pod creations.
// - Repeats: an event equal to one written within repeat_window (same object, type, reason and
//   message) increments that Event's count and lastTimestamp with a merge PATCH instead of a
//   new object (client-go's EventCorrelator); a repeated InvalidSpec stays one Event.
// - Best effort: a failed write is logged and counted, never retried forever. The API server
//   expires Events (--event-ttl, 1 h by default).
//
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "operator/backend/kube/client/kube_client.h"
#include "operator/backend/kube/client/rate_limiter.h"
#include "operator/backend/local/job_store.h"

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
  double qps = 5;
  int burst = 25;
  size_t max_queued = 1000;
  size_t max_message_bytes = 1024;
  std::string component = "coach-operator";  // source.component
  absl::Duration repeat_window = absl::Minutes(10);
  size_t max_remembered = 4096;  // events remembered for repeats
  // Optional: while it answers true, events wait (see the header comment).
  std::function<bool()> busy;
  absl::Duration max_defer = absl::Seconds(5);
};

class EventRecorder {
 public:
  struct Counts {
    uint64_t created = 0;   // Event objects created
    uint64_t repeated = 0;  // occurrences written as a count increment of an existing Event
    uint64_t combined = 0;  // occurrences written inside a combined Event
    uint64_t dropped = 0;   // queue full, or still queued at Stop
    uint64_t failed = 0;    // occurrences whose write failed
  };

  // `client` is not owned and must outlive the recorder. InvalidArgument: options.
  static absl::StatusOr<std::unique_ptr<EventRecorder>> Create(::coach::kube::KubeClient* client,
                                                               EventRecorderOptions options);
  ~EventRecorder();  // Stop(absl::Seconds(2))
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // Queues one occurrence; never waits for the API server. False: dropped (queue full or
  // stopped).
  bool Record(const EventTarget& target, const local::JobEvent& event);
  // Waits until nothing is queued or being written. False when `timeout` passed first.
  bool Flush(absl::Duration timeout);
  // Writes what is queued for up to `timeout`, drops (and counts) the rest, and joins the
  // sender. Idempotent.
  void Stop(absl::Duration timeout);
  Counts counts() const;

 private:
  struct Pending {
    EventTarget target;
    local::JobEvent event;
    absl::Time queued;
    // Later occurrences of the same object, type and reason folded in while the queue was full.
    std::vector<local::JobEvent> folded;
  };
  struct Remembered {
    std::string name;  // the Event object's name
    int64_t count = 0;
    absl::Time last;
  };

  EventRecorder(::coach::kube::KubeClient* client, EventRecorderOptions options);
  void Run();
  void Write(const std::vector<Pending>& batch);
  bool Patch(const Pending& p, const std::string& key);
  void CreateEvent(const std::vector<Pending>& batch, const std::string& key);
  void Remember(const std::string& key, Remembered value);

  ::coach::kube::KubeClient* const client_;
  const EventRecorderOptions options_;
  ::coach::kube::TokenBucketRateLimiter limiter_;
  std::atomic<bool> abort_{false};
  std::atomic<uint64_t> name_seq_{0};

  mutable absl::Mutex mu_;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Counts counts_ ABSL_GUARDED_BY(mu_);
  // Sender thread only.
  std::map<std::string, Remembered> remembered_;
  std::thread sender_;
};

}  // namespace coach::backend::kube
