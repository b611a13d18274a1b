// EventRecorder against FakeKubeClient: one Event per occurrence when quiet, combined Events
// under its rate limit, repeats as count increments, the bounded queue, failures, Stop.
// (CrJobStoreTest exercises the same path against a real kube-apiserver.)
#include "operator/backend/kube/event_recorder.h"

#include <atomic>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "operator/backend/kube/testing/fake_kube_client.h"

namespace coach::backend::kube {
namespace {

using ::coach::kube::testing::FakeKubeClient;
using ::coach::kube::ListOptions;
using nlohmann::json;
namespace resources = ::coach::kube::resources;

EventTarget Job(const std::string& name) {
  return {"ns", "kubeflow.org/v1", "PyTorchJob", name, "uid-" + name};
}

std::vector<json> Events(FakeKubeClient& client) {
  auto listed = client.List(resources::Events(), "ns", ListOptions{});
  EXPECT_TRUE(listed.ok()) << listed.status();
  return listed.ok() ? listed->items : std::vector<json>{};
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
    ASSERT_TRUE(recorder->Record(Job("a"), {"Normal", "SuccessfulCreatePod", absl::StrCat("Created pod: a-worker-", i),
                                            t0 + absl::Seconds(i)}));
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
    EXPECT_TRUE(absl::StartsWith(e["message"].get<std::string>(), "Created pod: a-worker-"));
  }
  EXPECT_EQ(recorder->counts().created, 8u);
  EXPECT_EQ(recorder->counts().combined, 0u);
}

TEST(EventRecorderTest, OverTheBudgetSimilarEventsAreCombined) {
  FakeKubeClient client;
  EventRecorderOptions o;
  o.qps = 4;
  o.burst = 2;
  auto recorder = NewRecorder(&client, o);
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  // 3 jobs x 10 pods, then one Warning for job a: far over a burst of 2.
  for (const char* job : {"a", "b", "c"}) {
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(recorder->Record(Job(job), {"Normal", "SuccessfulCreatePod",
                                              absl::StrCat("Created pod: ", job, "-worker-", i), t0 + absl::Seconds(i)}));
    }
  }
  ASSERT_TRUE(recorder->Record(Job("a"), {"Warning", "Other", "different reason", t0}));
  const absl::Time start = absl::Now();
  ASSERT_TRUE(recorder->Flush(absl::Seconds(20)));
  // Without combining, 31 events at 4/s after a burst of 2 would take over 7 s.
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));

  std::vector<json> events = Events(client);
  EXPECT_LT(events.size(), 10u);
  int64_t occurrences = 0;
  int combined_events = 0;
  for (const json& e : events) {
    occurrences += e["count"].get<int64_t>();
    const std::string message = e["message"];
    if (e["count"] > 1) {
      ++combined_events;
      EXPECT_TRUE(absl::StartsWith(message, absl::StrCat("(combined from ", e["count"].get<int64_t>(),
                                                         " similar events) Created pod: ")))
          << message;
      EXPECT_EQ(e["reason"], "SuccessfulCreatePod");
      // One job's pods only, and the span of their times.
      const std::string job = e["involvedObject"]["name"];
      EXPECT_FALSE(absl::StrContains(message, job == "a" ? "b-worker" : "a-worker")) << message;
      EXPECT_EQ(e["lastTimestamp"], "2023-11-14T22:13:29Z");
    }
    if (e["reason"] == "Other") {
      EXPECT_EQ(e["count"], 1);
    }
  }
  EXPECT_EQ(occurrences, 31);  // every occurrence is accounted for
  EXPECT_GE(combined_events, 2);
  EventRecorder::Counts counts = recorder->counts();
  EXPECT_EQ(counts.created, events.size());
  EXPECT_EQ(counts.dropped, 0u);
  EXPECT_EQ(counts.failed, 0u);
}

TEST(EventRecorderTest, RepeatsIncrementTheCountOfOneEvent) {
  FakeKubeClient client;
  auto recorder = NewRecorder(&client);
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(recorder->Record(Job("a"), {"Warning", "InvalidSpec", "spec.x: bad", t0 + absl::Seconds(i)}));
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
  EXPECT_EQ(recorder->counts().repeated, 2u);
  EXPECT_EQ(client.calls("Patch").size(), 2u);

  // The Event expired (deleted): the next repeat creates a new one.
  for (const json& e : events) {
    ASSERT_TRUE(client.Delete(resources::Events(), "ns", e["metadata"]["name"], {}).ok());
  }
  ASSERT_TRUE(recorder->Record(Job("a"), {"Warning", "InvalidSpec", "spec.x: bad", t0 + absl::Seconds(5)}));
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  events = Events(client);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["count"], 1);
}

TEST(EventRecorderTest, EventsWaitWhileBusyAndAreCombined) {
  FakeKubeClient client;
  std::atomic<bool> busy{true};
  EventRecorderOptions o;
  o.busy = [&] { return busy.load(); };
  o.max_defer = absl::Seconds(30);
  auto recorder = NewRecorder(&client, o);
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(recorder->Record(Job("a"), {"Normal", "SuccessfulCreatePod", absl::StrCat("Created pod: a-worker-", i),
                                            absl::Now()}));
  }
  EXPECT_FALSE(recorder->Flush(absl::Milliseconds(300)));  // held
  EXPECT_TRUE(Events(client).empty());
  busy = false;
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  std::vector<json> events = Events(client);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["count"], 6);
  EXPECT_TRUE(absl::StartsWith(events[0]["message"].get<std::string>(), "(combined from 6 similar events) "));

  // Never held longer than max_defer, however busy.
  busy = true;
  EventRecorderOptions short_defer = o;
  short_defer.max_defer = absl::Milliseconds(200);
  auto impatient = NewRecorder(&client, short_defer);
  ASSERT_TRUE(impatient->Record(Job("b"), {"Normal", "R", "m", absl::Now()}));
  EXPECT_TRUE(impatient->Flush(absl::Seconds(5)));
  EXPECT_EQ(Events(client).size(), 2u);
}

TEST(EventRecorderTest, FullQueueDropsAndStopCountsWhatWasLeft) {
  FakeKubeClient client;
  EventRecorderOptions o;
  o.qps = 0.001;  // after the first, the sender waits for ~1000 s
  o.burst = 1;
  o.max_queued = 3;
  auto recorder = NewRecorder(&client, o);
  ASSERT_TRUE(recorder->Record(Job("a"), {"Normal", "R", "first", absl::Now()}));
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  int accepted = 0;
  // Five different reasons: nothing to fold into, so the last two are dropped.
  for (int i = 0; i < 5; ++i) {
    accepted += recorder->Record(Job("a"), {"Normal", absl::StrCat("R", i), absl::StrCat(i), absl::Now()});
  }
  EXPECT_EQ(accepted, 3);
  EXPECT_FALSE(recorder->Flush(absl::Milliseconds(200)));
  const absl::Time start = absl::Now();
  recorder->Stop(absl::Milliseconds(200));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));  // Stop does not wait out the limiter
  EXPECT_EQ(recorder->counts().dropped, 5u);
  EXPECT_EQ(Events(client).size(), 1u);
  EXPECT_FALSE(recorder->Record(Job("a"), {"Normal", "R", "after stop", absl::Now()}));
}

TEST(EventRecorderTest, AFullQueueFoldsSimilarEventsInsteadOfDroppingThem) {
  FakeKubeClient client;
  std::atomic<bool> busy{true};
  EventRecorderOptions o;
  o.busy = [&] { return busy.load(); };
  o.max_defer = absl::Seconds(30);
  o.max_queued = 4;
  auto recorder = NewRecorder(&client, o);
  // Two jobs' first pod and service events fill the queue of 4 (held while busy); their other
  // 7 + 7 each fold into those.
  for (int i = 0; i < 8; ++i) {
    for (const char* job : {"a", "b"}) {
      ASSERT_TRUE(recorder->Record(Job(job), {"Normal", "SuccessfulCreatePod", absl::StrCat("Created pod: ", i), absl::Now()}));
      ASSERT_TRUE(recorder->Record(Job(job), {"Normal", "SuccessfulCreateService", absl::StrCat("Created service: ", i),
                                              absl::Now()}));
    }
  }
  // A third job finds the queue full of other groups: dropped.
  EXPECT_FALSE(recorder->Record(Job("c"), {"Normal", "SuccessfulCreatePod", "Created pod: c", absl::Now()}));
  busy = false;
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  std::vector<json> events = Events(client);
  ASSERT_EQ(events.size(), 4u);
  for (const json& e : events) {
    EXPECT_EQ(e["count"], 8) << e.dump();
  }
  EXPECT_EQ(recorder->counts().dropped, 1u);
  EXPECT_EQ(recorder->counts().combined, 32u);
}

TEST(EventRecorderTest, FailedWritesAreCountedAndDoNotStopTheSender) {
  FakeKubeClient client;
  auto recorder = NewRecorder(&client);
  client.FailNext("Create", absl::PermissionDeniedError("events is forbidden"));
  ASSERT_TRUE(recorder->Record(Job("a"), {"Normal", "R", "lost", absl::Now()}));
  ASSERT_TRUE(recorder->Record(Job("a"), {"Normal", "R", "kept", absl::Now()}));
  ASSERT_TRUE(recorder->Flush(absl::Seconds(10)));
  std::vector<json> events = Events(client);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["message"], "kept");
  EXPECT_EQ(recorder->counts().failed, 1u);
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
  EXPECT_TRUE(absl::IsInvalidArgument(EventRecorder::Create(nullptr, {}).status()));
}

}  // namespace
}  // namespace coach::backend::kube
