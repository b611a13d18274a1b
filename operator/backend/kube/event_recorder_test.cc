// EventRecorder against FakeKubeClient: one Event per occurrence as upstream, aggregation
// exactly where client-go aggregates (from the 10th distinct message of one object, type and
// reason within 10 min), repeats as count increments, nothing combined or dropped for being
// many or for waiting, the per-job and global bounds, Stop writing what is queued, failures.
// (CrJobStoreTest exercises the same path against a real kube-apiserver.)
#include "operator/backend/kube/event_recorder.h"

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"
#include "operator/backend/kube/testing/fake_kube_client.h"
#include "operator/metrics/registry.h"

namespace coach::backend::kube {
namespace {

using ::coach::kubeclient::ListOptions;
using ::coach::kubeclient::testing::FakeKubeClient;
using nlohmann::json;
namespace resources = ::coach::kubeclient::resources;

EventTarget Job(const std::string& name) {
  return {"ns", "kubeflow.org/v1", "PyTorchJob", name, "uid-" + name};
}

store::JobEvent Created(const std::string& job, const std::string& kind, int i, absl::Time t) {
  return {"Normal", "SuccessfulCreate" + kind, absl::StrCat("Created ", kind, ": ", job, "-", i),
          t};
}

std::vector<json> Events(FakeKubeClient& client) {
  auto listed = client.List(resources::Events(), "ns", ListOptions{});
  EXPECT_TRUE(listed.ok()) << listed.status();
  return listed.ok() ? listed->items : std::vector<json>{};
}

int64_t Occurrences(const std::vector<json>& events) {
  int64_t n = 0;
  for (const json& e : events) n += e["count"].get<int64_t>();
  return n;
}

std::unique_ptr<EventRecorder> NewRecorder(FakeKubeClient* client, EventRecorderOptions o = {}) {
  auto r = EventRecorder::Create(client, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return std::move(r).value();
}

TEST(EventRecorderTest, QuietClusterGetsOneEventPerOccurrence) {
  FakeKubeClient client;
  auto recorder = NewRecorder(&client);
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(recorder->Record(Job("a"), Created("a", "Pod", i, t0 + absl::Seconds(i))));
  }
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  std::vector<json> events = Events(client);
  ASSERT_EQ(events.size(), 8u);
  for (const json& e : events) {
    EXPECT_EQ(e["count"], 1);
    EXPECT_EQ(e["reason"], "SuccessfulCreatePod");
    EXPECT_EQ(e["type"], "Normal");
    EXPECT_EQ(e["involvedObject"]["uid"], "uid-a");
    EXPECT_EQ(e["involvedObject"]["kind"], "PyTorchJob");
    EXPECT_EQ(e["source"]["component"], "coach-operator");
    EXPECT_TRUE(absl::StartsWith(e["message"].get<std::string>(), "Created Pod: a-"));
  }
  EXPECT_EQ(recorder->counts().created, 8u);
  EXPECT_EQ(recorder->counts().combined, 0u);
}

// A regression: waiting for a burst of creations combined a 3-replica job's
// events into one. Waiting only delays them.
TEST(EventRecorderTest, EventsHeldWhileBusyAreWrittenOneByOne) {
  FakeKubeClient client;
  std::atomic<bool> busy{true};
  EventRecorderOptions o;
  o.busy = [&] { return busy.load(); };
  o.max_defer = absl::Hours(1);
  auto recorder = NewRecorder(&client, o);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(recorder->Record(Job("a"), Created("a", "Pod", i, absl::InfinitePast())));
    ASSERT_TRUE(recorder->Record(Job("a"), Created("a", "Service", i, absl::InfinitePast())));
  }
  EXPECT_FALSE(recorder->Flush(absl::Milliseconds(300)));  // held
  EXPECT_TRUE(Events(client).empty());
  EXPECT_EQ(recorder->counts().queued, 6u);
  busy = false;
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  std::vector<json> events = Events(client);
  ASSERT_EQ(events.size(), 6u);
  std::map<std::string, int> by_reason;
  for (const json& e : events) {
    EXPECT_EQ(e["count"], 1);
    EXPECT_FALSE(absl::StrContains(e["message"].get<std::string>(), "combined"));
    ++by_reason[e["reason"]];
  }
  EXPECT_EQ(by_reason["SuccessfulCreatePod"], 3);
  EXPECT_EQ(by_reason["SuccessfulCreateService"], 3);

  // Never held longer than max_defer, however busy.
  busy = true;
  EventRecorderOptions short_defer = o;
  short_defer.max_defer = absl::Milliseconds(200);
  auto impatient = NewRecorder(&client, short_defer);
  ASSERT_TRUE(impatient->Record(Job("b"), {"Normal", "R", "m", absl::InfinitePast()}));
  EXPECT_TRUE(impatient->Flush(absl::Seconds(5)));
  EXPECT_EQ(Events(client).size(), 7u);
}

// client-go's EventAggregator: the 10th distinct message of one object, type and reason
// within the window, and every later one, go into one "(combined from similar events)" Event.
TEST(EventRecorderTest, TwelveSimilarEventsAreCombinedFromTheTenthLikeClientGo) {
  FakeKubeClient client;
  ::coach::FakeClock clock;
  EventRecorderOptions o;
  o.clock = &clock;
  auto recorder = NewRecorder(&client, o);
  for (int i = 0; i < 12; ++i) {
    clock.Advance(absl::Seconds(1));
    ASSERT_TRUE(recorder->Record(Job("a"), Created("a", "Pod", i, clock.Now())));
  }
  // Another reason and another job have their own groups.
  ASSERT_TRUE(recorder->Record(Job("a"), Created("a", "Service", 0, clock.Now())));
  ASSERT_TRUE(recorder->Record(Job("b"), Created("b", "Pod", 0, clock.Now())));
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  std::vector<json> events = Events(client);
  ASSERT_EQ(events.size(), 12u);  // 9 + 1 combined, + 2
  int singles = 0;
  json combined;
  for (const json& e : events) {
    if (e["involvedObject"]["name"] != "a" || e["reason"] != "SuccessfulCreatePod") continue;
    if (e["count"] == 1 && !absl::StrContains(e["message"].get<std::string>(), "combined")) {
      ++singles;
    } else {
      combined = e;
    }
  }
  EXPECT_EQ(singles, 9);
  ASSERT_FALSE(combined.is_null());
  EXPECT_EQ(combined["count"], 3);
  EXPECT_EQ(combined["message"], "(combined from similar events): Created Pod: a-11");
  EXPECT_EQ(recorder->counts().combined, 3u);

  // More of them raise the count of that one Event (a PATCH).
  clock.Advance(absl::Seconds(1));
  ASSERT_TRUE(recorder->Record(Job("a"), Created("a", "Pod", 12, clock.Now())));
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  events = Events(client);
  EXPECT_EQ(events.size(), 12u);
  for (const json& e : events) {
    if (e["metadata"]["name"] == combined["metadata"]["name"]) {
      EXPECT_EQ(e["count"], 4);
      EXPECT_EQ(e["message"], "(combined from similar events): Created Pod: a-12");
    }
  }
  // A repeat of one of the first nine is that Event's repeat, not the aggregate's.
  ASSERT_TRUE(recorder->Record(Job("a"), Created("a", "Pod", 0, clock.Now())));
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  EXPECT_EQ(recorder->counts().combined, 4u);
  EXPECT_EQ(recorder->counts().patched, 2u);

  // More than the window after the last similar event, the group starts afresh.
  clock.Advance(absl::Minutes(11));
  ASSERT_TRUE(recorder->Record(Job("a"), Created("a", "Pod", 100, clock.Now())));
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  events = Events(client);
  ASSERT_EQ(events.size(), 13u);
  EXPECT_EQ(Occurrences(events), 12 + 2 + 1 + 1 + 1);
  EXPECT_EQ(recorder->counts().combined, 4u);
}

TEST(EventRecorderTest, OverTheBudgetNothingIsCombined) {
  FakeKubeClient client;
  EventRecorderOptions o;
  o.qps = 20;
  o.burst = 2;
  auto recorder = NewRecorder(&client, o);
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  for (const char* job : {"a", "b", "c"}) {
    for (int i = 0; i < 8; ++i) {
      ASSERT_TRUE(recorder->Record(Job(job), Created(job, "Pod", i, t0 + absl::Seconds(i))));
    }
  }
  ASSERT_TRUE(recorder->Flush(absl::Seconds(30)));
  std::vector<json> events = Events(client);
  ASSERT_EQ(events.size(), 24u);
  for (const json& e : events) EXPECT_EQ(e["count"], 1);
  EventRecorder::Counts counts = recorder->counts();
  EXPECT_EQ(counts.created, 24u);
  EXPECT_EQ(counts.written, 24u);
  EXPECT_EQ(counts.combined, 0u);
  EXPECT_EQ(counts.dropped, 0u);
}

// 200 jobs x 8 replicas held during their creation: 3200 Events, none combined or dropped
// (the old global queue of 1000 folded or dropped 2200 of them).
TEST(EventRecorderTest, ABurstOfTwoHundredJobsKeepsEveryEvent) {
  FakeKubeClient client;
  std::atomic<bool> busy{true};
  EventRecorderOptions o;
  o.busy = [&] { return busy.load(); };
  o.max_defer = absl::Hours(1);
  o.qps = 1e6;  // the rate is not what this tests
  o.burst = 1000000;
  auto recorder = NewRecorder(&client, o);
  for (int j = 0; j < 200; ++j) {
    const std::string job = absl::StrCat("job", j);
    for (int i = 0; i < 8; ++i) {
      ASSERT_TRUE(recorder->Record(Job(job), Created(job, "Pod", i, absl::InfinitePast())));
      ASSERT_TRUE(recorder->Record(Job(job), Created(job, "Service", i, absl::InfinitePast())));
    }
  }
  EXPECT_EQ(recorder->counts().queued, 3200u);
  busy = false;
  ASSERT_TRUE(recorder->Flush(absl::Seconds(60)));
  std::vector<json> events = Events(client);
  ASSERT_EQ(events.size(), 3200u);
  EXPECT_EQ(Occurrences(events), 3200);
  EventRecorder::Counts counts = recorder->counts();
  EXPECT_EQ(counts.written, 3200u);
  EXPECT_EQ(counts.combined, 0u);
  EXPECT_EQ(counts.dropped, 0u);
}

// Repeats while queued are one entry (one Event with their count): a job can queue only so
// much however often its events repeat.
TEST(EventRecorderTest, RepeatsWhileQueuedAreOneEvent) {
  FakeKubeClient client;
  std::atomic<bool> busy{true};
  EventRecorderOptions o;
  o.busy = [&] { return busy.load(); };
  o.max_defer = absl::Hours(1);
  auto recorder = NewRecorder(&client, o);
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(recorder->Record(Job("a"),
                                 {"Warning", "InvalidSpec", "spec.x: bad", t0 + absl::Seconds(i)}));
  }
  busy = false;
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  std::vector<json> events = Events(client);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["count"], 50);
  EXPECT_EQ(events[0]["firstTimestamp"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(events[0]["lastTimestamp"], "2023-11-14T22:14:09Z");
}

TEST(EventRecorderTest, RepeatsIncrementTheCountOfOneEvent) {
  FakeKubeClient client;
  auto recorder = NewRecorder(&client);
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(recorder->Record(Job("a"),
                                 {"Warning", "InvalidSpec", "spec.x: bad", t0 + absl::Seconds(i)}));
    ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  }
  ASSERT_TRUE(recorder->Record(Job("a"), {"Warning", "InvalidSpec", "spec.y: bad", t0}));
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  std::vector<json> events = Events(client);
  ASSERT_EQ(events.size(), 2u);
  for (const json& e : events) {
    if (e["message"] == "spec.x: bad") {
      EXPECT_EQ(e["count"], 3);
      EXPECT_EQ(e["firstTimestamp"], "2023-11-14T22:13:20Z");
      EXPECT_EQ(e["lastTimestamp"], "2023-11-14T22:13:22Z");
    } else {
      EXPECT_EQ(e["count"], 1);
    }
  }
  EXPECT_EQ(recorder->counts().patched, 2u);
  EXPECT_EQ(client.calls("Patch").size(), 2u);

  // The Event expired (deleted): the next repeat creates a new one.
  for (const json& e : events) {
    ASSERT_TRUE(client.Delete(resources::Events(), "ns", e["metadata"]["name"], {}).ok());
  }
  ASSERT_TRUE(
      recorder->Record(Job("a"), {"Warning", "InvalidSpec", "spec.x: bad", t0 + absl::Seconds(5)}));
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  events = Events(client);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["count"], 1);
}

// Beyond a job's bound (or the global one) an occurrence is dropped, counted in the metric
// and refused to the caller; other jobs are not affected by one job's flood.
TEST(EventRecorderTest, BoundsPerJobAndInAllDropVisibly) {
  FakeKubeClient client;
  std::atomic<bool> busy{true};
  EventRecorderOptions o;
  o.busy = [&] { return busy.load(); };
  o.max_defer = absl::Hours(1);
  o.max_pending_per_object = 4;
  o.max_queued = 6;
  auto recorder = NewRecorder(&client, o);
  metrics::Registry registry;
  recorder->ExportMetrics(&registry);
  int accepted = 0;
  for (int i = 0; i < 5; ++i) {  // five reasons: five entries
    accepted += recorder->Record(Job("a"), {"Normal", absl::StrCat("R", i), "m", absl::Now()});
  }
  EXPECT_EQ(accepted, 4);
  // A repeat of a queued one joins it: no new entry, not dropped.
  EXPECT_TRUE(recorder->Record(Job("a"), {"Normal", "R0", "m", absl::Now()}));
  EXPECT_TRUE(recorder->Record(Job("b"), {"Normal", "R", "b0", absl::Now()}));
  EXPECT_TRUE(recorder->Record(Job("b"), {"Normal", "R", "b1", absl::Now()}));
  EXPECT_FALSE(recorder->Record(Job("c"), {"Normal", "R", "c0", absl::Now()}));  // 6 in all
  EXPECT_EQ(recorder->counts().dropped, 2u);
  const std::string text = registry.Render();
  EXPECT_TRUE(absl::StrContains(text, "coach_kube_events_total{outcome=\"dropped\"} 2")) << text;
  EXPECT_TRUE(absl::StrContains(text, "coach_kube_events_queued 7")) << text;
  busy = false;
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  EXPECT_EQ(Occurrences(Events(client)), 7);
  EXPECT_TRUE(
      absl::StrContains(registry.Render(), "coach_kube_events_total{outcome=\"written\"} 7"));
}

// At shutdown what is queued is written without the event budget.
TEST(EventRecorderTest, StopWritesEverythingQueued) {
  FakeKubeClient client;
  EventRecorderOptions o;
  o.qps = 0.001;  // after the burst, one token per 1000 s
  o.burst = 1;
  auto recorder = NewRecorder(&client, o);
  for (int j = 0; j < 50; ++j) {
    const std::string job = absl::StrCat("job", j);
    for (int i = 0; i < 8; ++i) {
      ASSERT_TRUE(recorder->Record(Job(job), Created(job, "Pod", i, absl::InfinitePast())));
    }
  }
  EXPECT_FALSE(recorder->Flush(absl::Milliseconds(200)));  // the budget holds them
  recorder->Stop(absl::Seconds(60));
  EXPECT_EQ(Events(client).size(), 400u);
  EXPECT_EQ(recorder->counts().written, 400u);
  EXPECT_EQ(recorder->counts().dropped, 0u);
  EXPECT_FALSE(recorder->Record(Job("a"), {"Normal", "R", "after stop", absl::Now()}));
  EXPECT_EQ(recorder->counts().dropped, 1u);
}

// What the grace does not cover is counted (and logged), not lost silently.
TEST(EventRecorderTest, StopCountsWhatTheGraceDidNotCover) {
  FakeKubeClient client;
  absl::Notification release;
  std::atomic<int> creates{0};
  client.SetErrorHook([&](const ::coach::kubeclient::testing::FakeCall& call) {
    if (call.method == "Create" && creates.fetch_add(1) == 0) release.WaitForNotification();
    return absl::OkStatus();
  });
  auto recorder = NewRecorder(&client);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(recorder->Record(Job("a"), {"Normal", absl::StrCat("R", i), "m", absl::Now()}));
  }
  while (creates.load() == 0) absl::SleepFor(absl::Milliseconds(10));
  std::thread stopper([&] { recorder->Stop(absl::Milliseconds(100)); });
  // The first write hangs past the grace; the other nine were never sent.
  while (recorder->counts().dropped == 0) absl::SleepFor(absl::Milliseconds(10));
  release.Notify();
  stopper.join();
  EventRecorder::Counts counts = recorder->counts();
  EXPECT_EQ(counts.written, 1u);
  EXPECT_EQ(counts.dropped, 9u);
  EXPECT_EQ(counts.queued, 0u);
}

TEST(EventRecorderTest, FailedWritesAreRetriedOrCounted) {
  FakeKubeClient client;
  auto recorder = NewRecorder(&client);
  client.FailNext("Create", absl::PermissionDeniedError("events is forbidden"));
  ASSERT_TRUE(recorder->Record(Job("a"), {"Normal", "R", "lost", absl::Now()}));
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  client.FailNext("Create", absl::UnavailableError("connection refused"));
  ASSERT_TRUE(recorder->Record(Job("a"), {"Normal", "R", "kept", absl::Now()}));
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  std::vector<json> events = Events(client);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["message"], "kept");
  EXPECT_EQ(recorder->counts().failed, 1u);
  EXPECT_EQ(recorder->counts().written, 1u);
}

TEST(EventRecorderTest, LongMessagesAreCut) {
  FakeKubeClient client;
  EventRecorderOptions o;
  o.max_message_bytes = 64;
  auto recorder = NewRecorder(&client, o);
  ASSERT_TRUE(recorder->Record(Job("a"), {"Normal", "R", std::string(500, 'x'), absl::Now()}));
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  std::vector<json> events = Events(client);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["message"].get<std::string>().size(), 64u);
}

TEST(EventRecorderTest, BadOptionsAreRefused) {
  FakeKubeClient client;
  EventRecorderOptions o;
  o.qps = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(EventRecorder::Create(&client, o).status()));
  o = {};
  o.burst = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(EventRecorder::Create(&client, o).status()));
  o = {};
  o.max_pending_per_object = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(EventRecorder::Create(&client, o).status()));
  o = {};
  o.aggregate_max_events = 1;
  EXPECT_TRUE(absl::IsInvalidArgument(EventRecorder::Create(&client, o).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(EventRecorder::Create(nullptr, {}).status()));
}

}  // namespace
}  // namespace coach::backend::kube
