#include "operator/backend/kube/client/reflector.h"

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "absl/time/clock.h"
#include "common/testing/eventually.h"
#include "gtest/gtest.h"
#include "operator/backend/kube/client/errors.h"
#include "operator/backend/kube/testing/fake_kube_client.h"

namespace coach::kubeclient {
namespace {

using nlohmann::json;
using testing::FakeCall;
using testing::FakeKubeClient;

json Cm(const std::string& name, const std::string& v = "1") {
  return {{"metadata", {{"name", name}, {"labels", {{"app", "x"}}}}}, {"data", {{"v", v}}}};
}

// A cache fed by a Reflector: what an informer would hold.
struct Cache {
  std::mutex mu;
  std::map<std::string, std::string> data;  // name -> data.v
  int replaces = 0;
  std::vector<std::string> events;

  ReflectorHandlers Handlers() {
    ReflectorHandlers h;
    h.on_replace = [this](const std::vector<json>& items, const std::string&) {
      std::lock_guard<std::mutex> l(mu);
      ++replaces;
      data.clear();
      for (const auto& i : items) data[NameOf(i)] = i["data"].value("v", "");
    };
    h.on_event = [this](const WatchEvent& ev) {
      std::lock_guard<std::mutex> l(mu);
      events.push_back(std::string(WatchEventTypeName(ev.type)) + " " + NameOf(ev.object));
      if (ev.type == WatchEventType::kDeleted) {
        data.erase(NameOf(ev.object));
      } else {
        data[NameOf(ev.object)] = ev.object["data"].value("v", "");
      }
    };
    return h;
  }
  std::map<std::string, std::string> Snapshot() {
    std::lock_guard<std::mutex> l(mu);
    return data;
  }
};

// This file's conditions hold within 5 s when they hold at all.
bool Eventually(const std::function<bool()>& f, absl::Duration timeout = absl::Seconds(5)) {
  return ::coach::testing::Eventually(f, timeout);
}

TEST(ReflectorTest, ListsPagesThenWatchesAndRelistsOnGone) {
  FakeKubeClient fake;
  auto cms = resources::ConfigMaps();
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(fake.Create(cms, "ns", Cm("cm" + std::to_string(i))).ok());
  ASSERT_TRUE(fake.Create(cms, "other", Cm("elsewhere")).ok());
  Cache cache;
  ReflectorOptions o;
  o.page_size = 2;
  o.initial_backoff = absl::Milliseconds(10);
  o.label_selector = "app=x";
  Reflector r(&fake, cms, "ns", o, cache.Handlers());
  std::thread t([&] { r.Run(); });
  ASSERT_TRUE(Eventually([&] { return cache.Snapshot().size() == 5 && fake.open_watches() == 1; }));
  EXPECT_EQ(fake.calls("List").size(), 3u);  // 2 + 2 + 1

  ASSERT_TRUE(fake.Create(cms, "ns", Cm("new")).ok());
  ASSERT_TRUE(fake.Patch(cms, "ns", "cm0", PatchType::kMerge, {{"data", {{"v", "2"}}}}).ok());
  ASSERT_TRUE(fake.Delete(cms, "ns", "cm1", {}).ok());
  ASSERT_TRUE(
      Eventually([&] { return cache.Snapshot().size() == 5 && cache.Snapshot()["cm0"] == "2"; }));
  EXPECT_EQ(cache.events, (std::vector<std::string>{"ADDED new", "MODIFIED cm0", "DELETED cm1"}));

  // A bookmark moves the resourceVersion on without an event.
  ASSERT_TRUE(fake.Create(cms, "other", Cm("unwatched")).ok());
  fake.SendBookmark(cms);
  ASSERT_TRUE(
      Eventually([&] { return r.last_resource_version() == fake.CurrentResourceVersion(); }));
  EXPECT_EQ(cache.events.size(), 3u);

  // The server closes the watch: it resumes from the last resourceVersion without a list.
  fake.CloseWatches();
  ASSERT_TRUE(Eventually([&] { return r.watch_count() >= 2 && fake.open_watches() == 1; }));
  EXPECT_EQ(r.list_count(), 1);

  // The next watch is Gone (410): it re-lists and replaces the cache.
  fake.FailNext("Watch", GoneError("too old resource version"));
  fake.CloseWatches();
  ASSERT_TRUE(Eventually([&] { return r.list_count() == 2; }));
  ASSERT_TRUE(fake.Create(cms, "ns", Cm("after-relist")).ok());
  ASSERT_TRUE(Eventually([&] { return cache.Snapshot().count("after-relist") == 1; }));
  EXPECT_EQ(cache.replaces, 2);

  // Errors back off and recover.
  fake.FailNext("Watch", absl::UnavailableError("apiserver down"), 2);
  fake.CloseWatches();
  ASSERT_TRUE(fake.Create(cms, "ns", Cm("after-outage")).ok());
  ASSERT_TRUE(Eventually([&] { return cache.Snapshot().count("after-outage") == 1; }));

  absl::Time stop_at = absl::Now();
  r.Stop();
  t.join();
  EXPECT_LT(absl::Now() - stop_at, absl::Seconds(1));
}

// The transform sees every listed item, page by page, and on_replace gets what it returned.
TEST(ReflectorTest, TransformTrimsListedItems) {
  FakeKubeClient fake;
  auto cms = resources::ConfigMaps();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(fake.Create(cms, "ns", Cm("cm" + std::to_string(i))).ok());
  }
  Cache cache;
  ReflectorHandlers h = cache.Handlers();
  std::atomic<int> transformed{0};
  h.transform = [&](json item) {
    ++transformed;
    return json{{"metadata", {{"name", NameOf(item)}}}, {"data", {{"v", "trimmed"}}}};
  };
  ReflectorOptions o;
  o.page_size = 2;
  Reflector r(&fake, cms, "ns", o, std::move(h));
  std::thread t([&] { r.Run(); });
  ASSERT_TRUE(Eventually([&] { return cache.Snapshot().size() == 3; }));
  EXPECT_EQ(transformed.load(), 3);
  EXPECT_EQ(cache.Snapshot()["cm2"], "trimmed");
  r.Stop();
  t.join();
}

// A continue token that expires mid-list restarts a paged list (an unpaged answer for a large
// cluster can exceed the client's body cap); only repeated expiry falls back to one unpaged list.
TEST(ReflectorTest, ExpiredContinueTokenRestartsPagedThenUnpaged) {
  for (bool keeps_expiring : {false, true}) {
    SCOPED_TRACE(keeps_expiring ? "every continuation expires" : "one continuation expires");
    FakeKubeClient fake;
    auto cms = resources::ConfigMaps();
    for (int i = 0; i < 5; ++i)
      ASSERT_TRUE(fake.Create(cms, "ns", Cm("cm" + std::to_string(i))).ok());
    std::atomic<int> lists{0};
    // With page_size 2, the even-numbered List calls are continuations.
    fake.SetErrorHook([&](const FakeCall& call) -> absl::Status {
      if (call.method != "List") return absl::OkStatus();
      int n = ++lists;
      bool fail = keeps_expiring ? (n % 2 == 0 && n <= 8) : n == 2;
      return fail ? GoneError("continue token expired") : absl::OkStatus();
    });
    Cache cache;
    ReflectorOptions o;
    o.page_size = 2;
    o.initial_backoff = absl::Milliseconds(10);
    Reflector r(&fake, cms, "ns", o, cache.Handlers());
    std::thread t([&] { r.Run(); });
    ASSERT_TRUE(
        Eventually([&] { return cache.Snapshot().size() == 5 && fake.open_watches() == 1; }));
    // One expiry: 1 page, the expired one, then 3 fresh pages (2 + 2 + 1). Every continuation
    // expiring: 4 attempts of 2 calls each, then 1 unpaged list of all 5.
    EXPECT_EQ(lists.load(), keeps_expiring ? 9 : 5);
    EXPECT_EQ(r.list_count(), 1);
    EXPECT_EQ(cache.replaces, 1);
    r.Stop();
    t.join();
  }
}

TEST(ReflectorTest, ListErrorsRetryAndStopWhileBackingOff) {
  FakeKubeClient fake;
  fake.FailNext("List", absl::UnavailableError("down"), 2);
  ASSERT_TRUE(fake.Create(resources::ConfigMaps(), "ns", Cm("a")).ok());
  Cache cache;
  ReflectorOptions o;
  o.initial_backoff = absl::Milliseconds(10);
  std::vector<absl::Status> errors;
  ReflectorHandlers h = cache.Handlers();
  h.on_error = [&](const absl::Status& s) { errors.push_back(s); };
  Reflector r(&fake, resources::ConfigMaps(), "ns", o, h);
  std::thread t([&] { r.Run(); });
  ASSERT_TRUE(Eventually([&] { return cache.Snapshot().size() == 1; }));
  r.Stop();
  t.join();
  EXPECT_EQ(errors.size(), 2u);

  FakeKubeClient down;
  down.SetErrorHook([](const testing::FakeCall&) { return absl::UnavailableError("always down"); });
  ReflectorOptions slow;
  slow.initial_backoff = absl::Seconds(30);
  Reflector r2(&down, resources::ConfigMaps(), "ns", slow, {});
  std::thread t2([&] { r2.Run(); });
  ASSERT_TRUE(Eventually([&] { return r2.list_count() == 1; }));
  absl::Time stop_at = absl::Now();
  r2.Stop();
  t2.join();
  EXPECT_LT(absl::Now() - stop_at, absl::Seconds(1));
}

}  // namespace
}  // namespace coach::kubeclient
