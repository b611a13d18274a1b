// RestKubeClient against a cpp-httplib server that plays the apiserver: paths and queries,
// error mapping, retries with Retry-After, conflicts, watch framing, logs, auth and the
// rate limiter.
#include "operator/backend/kube/client/rest_kube_client.h"

#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "operator/backend/kube/client/errors.h"

namespace coach::kubeclient {
namespace {

using nlohmann::json;

json StatusBody(int code, const std::string& reason, const std::string& message,
                std::vector<std::string> fields = {}) {
  json s = {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
            {"code", code},     {"reason", reason},   {"message", message}};
  for (const auto& f : fields)
    s["details"]["causes"].push_back({{"field", f}, {"reason", "FieldValueInvalid"}});
  return s;
}

class FakeApiServer {
 public:
  FakeApiServer() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~FakeApiServer() {
    server_.stop();
    thread_.join();
  }
  httplib::Server& server() { return server_; }
  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

class RestKubeClientTest : public ::testing::Test {
 protected:
  std::unique_ptr<RestKubeClient> NewClient(RestKubeClientOptions o = {}, KubeConfig cfg = {}) {
    cfg.server = api_.url();
    o.retry.initial_backoff = absl::Milliseconds(10);
    o.retry.jitter = 0;
    auto c = RestKubeClient::Create(cfg, o);
    EXPECT_TRUE(c.ok()) << c.status();
    return std::move(*c);
  }
  FakeApiServer api_;
};

TEST_F(RestKubeClientTest, PathsAndListQuery) {
  std::mutex mu;
  std::vector<std::string> seen;
  api_.server().Get(R"(/.*)", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> l(mu);
    std::string q;
    for (const auto& [k, v] : req.params) absl::StrAppend(&q, k, "=", v, ";");
    seen.push_back(req.path + "?" + q);
    if (req.path.find("/configmaps") != std::string::npos &&
        req.path.find("/configmaps/") == std::string::npos) {
      res.set_content(
          R"({"kind":"ConfigMapList","metadata":{"resourceVersion":"42","continue":"tok2"},"items":[{"metadata":{"name":"a"}}]})",
          "application/json");
    } else {
      res.set_content(R"({"metadata":{"name":"x"}})", "application/json");
    }
  });
  auto c = NewClient();
  ASSERT_TRUE(c->Get(resources::ConfigMaps(), "ns1", "x").ok());
  ASSERT_TRUE(c->Get(resources::Kubeflow("pytorchjobs", "PyTorchJob"), "ns1", "j").ok());
  ASSERT_TRUE(c->Get(resources::Nodes(), "ignored", "n1").ok());
  ASSERT_TRUE(c->GetStatus(resources::Pods(), "ns1", "p").ok());
  ListOptions lo;
  lo.label_selector = "app=x,tier in (a,b)";
  lo.field_selector = "status.phase!=Running";
  lo.limit = 10;
  lo.continue_token = "tok1";
  lo.resource_version = "7";
  auto list = c->List(resources::ConfigMaps(), "ns1", lo);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->resource_version, "42");
  EXPECT_EQ(list->continue_token, "tok2");
  ASSERT_EQ(list->items.size(), 1u);
  EXPECT_EQ(list->items[0]["kind"], "ConfigMap");
  EXPECT_EQ(list->items[0]["apiVersion"], "v1");
  ASSERT_TRUE(c->List(resources::Pods(), "", {}).ok());
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen[0], "/api/v1/namespaces/ns1/configmaps/x?");
  EXPECT_EQ(seen[1], "/apis/kubeflow.org/v1/namespaces/ns1/pytorchjobs/j?");
  EXPECT_EQ(seen[2], "/api/v1/nodes/n1?");
  EXPECT_EQ(seen[3], "/api/v1/namespaces/ns1/pods/p/status?");
  EXPECT_EQ(seen[4],
            "/api/v1/namespaces/ns1/configmaps?continue=tok1;fieldSelector=status.phase!=Running;"
            "labelSelector=app=x,tier in (a,b);limit=10;resourceVersion=7;");
  EXPECT_EQ(seen[5], "/api/v1/pods?");
}

struct MappingCase {
  int http;
  std::string reason;
  absl::StatusCode code;
};

TEST_F(RestKubeClientTest, ErrorMapping) {
  std::atomic<int> http{0};
  std::string reason;
  api_.server().Get(R"(/.*)", [&](const httplib::Request&, httplib::Response& res) {
    res.status = http.load();
    res.set_content(StatusBody(http, reason, "server says no").dump(), "application/json");
  });
  RestKubeClientOptions o;
  o.retry.max_attempts = 1;
  auto c = NewClient(o);
  std::vector<MappingCase> cases = {
      {400, "BadRequest", absl::StatusCode::kInvalidArgument},
      {422, "Invalid", absl::StatusCode::kInvalidArgument},
      {401, "Unauthorized", absl::StatusCode::kUnauthenticated},
      {403, "Forbidden", absl::StatusCode::kPermissionDenied},
      {404, "NotFound", absl::StatusCode::kNotFound},
      {409, "AlreadyExists", absl::StatusCode::kAlreadyExists},
      {409, "Conflict", absl::StatusCode::kAborted},
      {410, "Expired", absl::StatusCode::kOutOfRange},
      {429, "TooManyRequests", absl::StatusCode::kUnavailable},
      {500, "InternalError", absl::StatusCode::kUnavailable},
      {503, "ServiceUnavailable", absl::StatusCode::kUnavailable},
      {504, "Timeout", absl::StatusCode::kUnavailable},
      {405, "MethodNotAllowed", absl::StatusCode::kFailedPrecondition},
  };
  for (const auto& tc : cases) {
    http = tc.http;
    reason = tc.reason;
    auto r = c->Get(resources::Pods(), "ns", "p");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), tc.code) << tc.http << " " << tc.reason << ": " << r.status();
    EXPECT_EQ(HttpCode(r.status()), tc.http);
    EXPECT_NE(r.status().message().find("server says no"), std::string::npos) << r.status();
    EXPECT_NE(r.status().message().find("GET /api/v1/namespaces/ns/pods/p"), std::string::npos);
    EXPECT_EQ(IsGone(r.status()), tc.http == 410);
  }
}

TEST_F(RestKubeClientTest, InvalidNamesTheFields) {
  api_.server().Post(R"(/.*)", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 422;
    res.set_content(StatusBody(422, "Invalid", "Pod \"p\" is invalid",
                               {"spec.containers[0].image", "metadata.name"})
                        .dump(),
                    "application/json");
  });
  auto c = NewClient();
  auto r = c->Create(resources::Pods(), "ns", {{"metadata", {{"name", "p"}}}});
  ASSERT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("[fields: spec.containers[0].image, metadata.name]"),
            std::string::npos)
      << r.status();
}

TEST_F(RestKubeClientTest, NonJsonErrorBodyAndConnectionRefused) {
  api_.server().Get(R"(/.*)", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 404;
    res.set_content("404 page not found", "text/plain");
  });
  auto c = NewClient();
  auto r = c->Get(resources::Pods(), "ns", "p");
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("404 page not found"), std::string::npos);

  KubeConfig cfg;
  cfg.server = "http://127.0.0.1:1";
  RestKubeClientOptions o;
  o.retry.max_attempts = 2;
  o.retry.initial_backoff = absl::Milliseconds(1);
  auto dead = RestKubeClient::Create(cfg, o);
  ASSERT_TRUE(dead.ok());
  auto d = (*dead)->Get(resources::Pods(), "ns", "p");
  EXPECT_TRUE(absl::IsUnavailable(d.status())) << d.status();
  EXPECT_EQ((*dead)->requests_sent(), 2);
}

TEST_F(RestKubeClientTest, RetriesHonourRetryAfter) {
  std::atomic<int> calls{0};
  api_.server().Get(R"(/.*)", [&](const httplib::Request&, httplib::Response& res) {
    if (calls.fetch_add(1) < 2) {
      res.status = 429;
      res.set_header("Retry-After", "1");
      res.set_content(StatusBody(429, "TooManyRequests", "slow down").dump(), "application/json");
      return;
    }
    res.set_content(R"({"metadata":{"name":"p"}})", "application/json");
  });
  auto c = NewClient();
  absl::Time start = absl::Now();
  auto r = c->Get(resources::Pods(), "ns", "p");
  absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(calls.load(), 3);
  EXPECT_GE(took, absl::Milliseconds(1900));  // two Retry-After: 1 waits, not the 10 ms backoff
  EXPECT_LT(took, absl::Seconds(5));
}

TEST_F(RestKubeClientTest, RetriesGiveUpWithUnavailableCarryingRetryAfter) {
  std::atomic<int> calls{0};
  api_.server().Get(R"(/.*)", [&](const httplib::Request&, httplib::Response& res) {
    calls++;
    res.status = 503;
    res.set_header("Retry-After", "0");
    res.set_content("overloaded", "text/plain");
  });
  RestKubeClientOptions o;
  o.retry.max_attempts = 3;
  auto c = NewClient(o);
  auto r = c->Get(resources::Pods(), "ns", "p");
  ASSERT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_EQ(calls.load(), 3);
  ASSERT_TRUE(RetryAfter(r.status()).has_value());
  EXPECT_EQ(*RetryAfter(r.status()), absl::ZeroDuration());
}

TEST_F(RestKubeClientTest, PostIsRetriedOnlyWhenItDidNotRun) {
  std::atomic<int> calls{0};
  std::atomic<int> code{500};
  api_.server().Post(R"(/.*)", [&](const httplib::Request&, httplib::Response& res) {
    calls++;
    res.status = code.load();
    res.set_content(StatusBody(code, "x", "no").dump(), "application/json");
  });
  auto c = NewClient();
  auto r = c->Create(resources::ConfigMaps(), "ns", {{"metadata", {{"name", "a"}}}});
  EXPECT_TRUE(absl::IsUnavailable(r.status()));
  EXPECT_EQ(calls.load(), 1);  // a 500 may have created it: not retried
  calls = 0;
  code = 429;
  r = c->Create(resources::ConfigMaps(), "ns", {{"metadata", {{"name", "a"}}}});
  EXPECT_TRUE(absl::IsUnavailable(r.status()));
  EXPECT_EQ(calls.load(), 5);  // 429: the server did not run it
}

TEST_F(RestKubeClientTest, RetryOnConflictRereadsAndRetries) {
  std::atomic<int> puts{0};
  std::atomic<int> gets{0};
  api_.server().Get(R"(/.*)", [&](const httplib::Request&, httplib::Response& res) {
    int n = ++gets;
    res.set_content(
        json({{"metadata", {{"name", "cm"}, {"resourceVersion", std::to_string(n)}}}}).dump(),
        "application/json");
  });
  api_.server().Put(R"(/.*)", [&](const httplib::Request& req, httplib::Response& res) {
    auto body = json::parse(req.body);
    if (++puts < 3) {
      res.status = 409;
      res.set_content(StatusBody(409, "Conflict", "the object has been modified").dump(),
                      "application/json");
      return;
    }
    res.set_content(body.dump(), "application/json");
  });
  auto c = NewClient();
  absl::Status s = RetryOnConflict([&]() -> absl::Status {
    auto cur = c->Get(resources::ConfigMaps(), "ns", "cm");
    if (!cur.ok()) return cur.status();
    (*cur)["data"]["k"] = "v";
    return c->Update(resources::ConfigMaps(), "ns", *cur).status();
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(puts.load(), 3);
  EXPECT_EQ(gets.load(), 3);

  puts = -100;  // always conflicts
  RetryOnConflictOptions ro;
  ro.max_attempts = 4;
  s = RetryOnConflict(
      [&]() {
        return c->Update(resources::ConfigMaps(), "ns", {{"metadata", {{"name", "cm"}}}}).status();
      },
      ro);
  EXPECT_TRUE(absl::IsAborted(s)) << s;
  EXPECT_EQ(puts.load(), -96);
}

TEST_F(RestKubeClientTest, PatchDeleteAndUpdateRequests) {
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> seen;  // method+path+content-type, body
  auto record = [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> l(mu);
    seen.emplace_back(
        absl::StrCat(req.method, " ", req.path, " ", req.get_header_value("Content-Type")),
        req.body);
    res.set_content(R"({"metadata":{"name":"x"}})", "application/json");
  };
  api_.server().Patch(R"(/.*)", record);
  api_.server().Delete(R"(/.*)", record);
  api_.server().Put(R"(/.*)", record);
  auto c = NewClient();
  auto pods = resources::Pods();
  ASSERT_TRUE(
      c->Patch(pods, "ns", "x", PatchType::kMerge, {{"metadata", {{"labels", {{"a", "b"}}}}}})
          .ok());
  ASSERT_TRUE(c->Patch(pods, "ns", "x", PatchType::kJson,
                       json::array({{{"op", "add"}, {"path", "/a"}, {"value", 1}}}))
                  .ok());
  ASSERT_TRUE(c->PatchStatus(pods, "ns", "x", PatchType::kStrategicMerge,
                             {{"status", {{"phase", "Running"}}}})
                  .ok());
  ASSERT_TRUE(c->UpdateStatus(pods, "ns", {{"metadata", {{"name", "x"}}}}).ok());
  DeleteOptions d;
  d.precondition_uid = "u1";
  d.precondition_resource_version = "9";
  d.propagation = PropagationPolicy::kForeground;
  d.grace_period_seconds = 0;
  ASSERT_TRUE(c->Delete(pods, "ns", "x", d).ok());
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[0].first, "PATCH /api/v1/namespaces/ns/pods/x application/merge-patch+json");
  EXPECT_EQ(seen[1].first, "PATCH /api/v1/namespaces/ns/pods/x application/json-patch+json");
  EXPECT_EQ(seen[2].first,
            "PATCH /api/v1/namespaces/ns/pods/x/status application/strategic-merge-patch+json");
  EXPECT_EQ(seen[3].first, "PUT /api/v1/namespaces/ns/pods/x/status application/json");
  EXPECT_EQ(seen[4].first, "DELETE /api/v1/namespaces/ns/pods/x application/json");
  auto body = json::parse(seen[4].second);
  EXPECT_EQ(body["preconditions"]["uid"], "u1");
  EXPECT_EQ(body["preconditions"]["resourceVersion"], "9");
  EXPECT_EQ(body["propagationPolicy"], "Foreground");
  EXPECT_EQ(body["gracePeriodSeconds"], 0);
  EXPECT_EQ(body["kind"], "DeleteOptions");
}

// The watch body in pieces that split lines (and a JSON value) at arbitrary points.
TEST_F(RestKubeClientTest, WatchParsesSplitLinesBookmarksAndGone) {
  std::string query;
  std::vector<std::string> chunks = {
      R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"10"}}})"
      "\n"
      R"({"type":"MODI)",
      R"(FIED","object":{"metadata":{"name":"a","resourceVersion":"11"}}})",
      "\n\n",
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"15"}}})"
      "\n"
      R"({"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"16"}}})"
      "\n",
      R"J({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 16 (20)","reason":"Expired","code":410}})J"
      "\n",
  };
  api_.server().Get(R"(/.*)", [&](const httplib::Request& req, httplib::Response& res) {
    for (const auto& [k, v] : req.params) absl::StrAppend(&query, k, "=", v, ";");
    res.set_chunked_content_provider("application/json",
                                     [&chunks](size_t, httplib::DataSink& sink) {
                                       for (const auto& c : chunks) {
                                         sink.write(c.data(), c.size());
                                         std::this_thread::sleep_for(std::chrono::milliseconds(20));
                                       }
                                       sink.done();
                                       return true;
                                     });
  });
  auto c = NewClient();
  std::vector<std::string> got;
  WatchOptions wo;
  wo.resource_version = "9";
  wo.label_selector = "app=x";
  wo.timeout_seconds = 60;
  absl::Status s = c->Watch(resources::Pods(), "ns", wo, [&](const WatchEvent& ev) {
    got.push_back(absl::StrCat(WatchEventTypeName(ev.type), "@", ev.resource_version));
    return true;
  });
  EXPECT_TRUE(IsGone(s)) << s;
  EXPECT_EQ(got,
            (std::vector<std::string>{"ADDED@10", "MODIFIED@11", "BOOKMARK@15", "DELETED@16"}));
  EXPECT_EQ(
      query,
      "allowWatchBookmarks=true;labelSelector=app=x;resourceVersion=9;timeoutSeconds=60;watch=1;");
}

TEST_F(RestKubeClientTest, WatchEndsOnHandlerFalseStopAndServerClose) {
  std::atomic<bool> endless{true};
  api_.server().Get(R"(/.*)", [&](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json", [&](size_t, httplib::DataSink& sink) {
      for (int i = 1; i <= 3; ++i) {
        std::string line = absl::StrCat(R"({"type":"ADDED","object":{"metadata":{"name":"o)", i,
                                        R"(","resourceVersion":")", i, R"("}}})", "\n");
        if (!sink.write(line.data(), line.size())) return false;
      }
      for (int i = 0; endless && i < 300 && sink.is_writable(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      sink.done();
      return true;
    });
  });
  auto c = NewClient();
  int n = 0;
  absl::Status s =
      c->Watch(resources::Pods(), "ns", {}, [&](const WatchEvent&) { return ++n < 2; });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(n, 2);

  std::atomic<bool> stop{false};
  WatchOptions wo;
  wo.stop = &stop;
  n = 0;
  absl::Time start = absl::Now();
  s = c->Watch(resources::Pods(), "ns", wo, [&](const WatchEvent&) {
    if (++n == 3) stop = true;
    return true;
  });
  EXPECT_TRUE(absl::IsCancelled(s)) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(2.5));

  endless = false;
  n = 0;
  s = c->Watch(resources::Pods(), "ns", {}, [&](const WatchEvent&) { return ++n > 0; });
  EXPECT_TRUE(s.ok()) << s;  // the server ended the stream: watch again
  EXPECT_EQ(n, 3);
}

TEST_F(RestKubeClientTest, WatchStartingWith410IsGone) {
  api_.server().Get(R"(/.*)", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 410;
    res.set_content(StatusBody(410, "Expired", "too old").dump(), "application/json");
  });
  auto c = NewClient();
  absl::Status s = c->Watch(resources::Pods(), "ns", {}, [](const WatchEvent&) { return true; });
  EXPECT_TRUE(IsGone(s)) << s;
}

TEST_F(RestKubeClientTest, LogsStreamAndQuery) {
  std::string query;
  api_.server().Get(R"(/api/v1/namespaces/ns/pods/p/log)", [&](const httplib::Request& req,
                                                               httplib::Response& res) {
    for (const auto& [k, v] : req.params) absl::StrAppend(&query, k, "=", v, ";");
    res.set_chunked_content_provider("text/plain", [](size_t, httplib::DataSink& sink) {
      sink.write("line 1\nli", 9);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      sink.write("ne 2\n", 5);
      sink.done();
      return true;
    });
  });
  auto c = NewClient();
  LogOptions lo;
  lo.container = "pytorch";
  lo.follow = true;
  lo.tail_lines = 10;
  std::string all;
  int chunks = 0;
  absl::Status s = c->StreamLogs("ns", "p", lo, [&](absl::string_view chunk) {
    ++chunks;
    all.append(chunk.data(), chunk.size());
    return true;
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(all, "line 1\nline 2\n");
  EXPECT_GE(chunks, 2);
  EXPECT_EQ(query, "container=pytorch;follow=true;tailLines=10;");
  auto whole = GetLogs(*c, "ns", "p", {});
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, "line 1\nline 2\n");
}

TEST_F(RestKubeClientTest, BearerTokenFromARotatingFile) {
  std::mutex mu;
  std::vector<std::string> auths;
  api_.server().Get(R"(/.*)", [&](const httplib::Request& req, httplib::Response& res) {
    std::string a = req.get_header_value("Authorization");
    {
      std::lock_guard<std::mutex> l(mu);
      auths.push_back(a);
    }
    if (a == "Bearer expired") {
      res.status = 401;
      res.set_content(StatusBody(401, "Unauthorized", "Unauthorized").dump(), "application/json");
      return;
    }
    res.set_content("{}", "application/json");
  });
  std::string dir = ::testing::TempDir();
  std::string path = dir + "/token";
  auto write = [&](const std::string& t) { std::ofstream(path, std::ios::trunc) << t << "\n"; };
  write("t1");
  KubeConfig cfg;
  cfg.token_file = path;
  auto c = NewClient({}, cfg);
  ASSERT_TRUE(c->Get(resources::Pods(), "ns", "p").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  write("t2-rotated");
  ASSERT_TRUE(c->Get(resources::Pods(), "ns", "p").ok());
  EXPECT_EQ(auths, (std::vector<std::string>{"Bearer t1", "Bearer t2-rotated"}));

  KubeConfig literal;
  literal.token = "expired";
  auto c2 = NewClient({}, literal);
  auto r = c2->Get(resources::Pods(), "ns", "p");
  EXPECT_TRUE(absl::IsUnauthenticated(r.status())) << r.status();
  EXPECT_EQ(r.status().message().find("expired"), std::string::npos)
      << "the token leaked into the message";
}

TEST_F(RestKubeClientTest, RateLimiterIsSharedByAllRequests) {
  api_.server().Get(R"(/.*)", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  RestKubeClientOptions o;
  o.qps = 20;
  o.burst = 5;
  auto c = NewClient(o);
  absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) EXPECT_TRUE(c->Get(resources::Pods(), "ns", "p").ok());
    });
  }
  for (auto& t : threads) t.join();
  absl::Duration took = absl::Now() - start;
  // 15 requests, 5 from the burst, 10 at 20/s: 0.5 s.
  EXPECT_GE(took, absl::Milliseconds(450));
  EXPECT_LT(took, absl::Seconds(3));
  EXPECT_EQ(c->requests_sent(), 15);
}

// A server that classifies requests under API Priority and Fairness lifts a fallback limit;
// one that does not, or a client with a fixed limit, keeps it.
TEST_F(RestKubeClientTest, PriorityAndFairnessLiftsAFallbackLimitOnly) {
  std::atomic<bool> apf{false};
  api_.server().Get(R"(/.*)", [&](const httplib::Request&, httplib::Response& res) {
    if (apf.load()) res.set_header("X-Kubernetes-PF-FlowSchema-UID", "3b7c1f0e-uid");
    res.set_content("{}", "application/json");
  });
  auto timed_gets = [](RestKubeClient& c, int n) {
    absl::Time start = absl::Now();
    for (int i = 0; i < n; ++i) EXPECT_TRUE(c.Get(resources::Pods(), "ns", "p").ok());
    return absl::Now() - start;
  };
  RestKubeClientOptions fallback;
  fallback.qps = 5;
  fallback.burst = 1;
  fallback.lift_limit_on_apf = true;

  // No APF header: 6 requests at 5/s after a burst of 1 take about 1 s.
  auto without = NewClient(fallback);
  EXPECT_GE(timed_gets(*without, 6), absl::Milliseconds(900));
  EXPECT_FALSE(without->rate_limiter().lifted());

  apf = true;
  auto with = NewClient(fallback);
  // Limited, 20 would take 3.8 s; lifted, they take what the machine gives local requests (well
  // under a second when idle, near one under a loaded test run): 3 s tells the two apart.
  EXPECT_LT(timed_gets(*with, 20), absl::Seconds(3));
  EXPECT_TRUE(with->rate_limiter().lifted());

  RestKubeClientOptions fixed = fallback;
  fixed.lift_limit_on_apf = false;
  auto explicit_limit = NewClient(fixed);
  EXPECT_GE(timed_gets(*explicit_limit, 6), absl::Milliseconds(900));
  EXPECT_FALSE(explicit_limit->rate_limiter().lifted());
}

TEST_F(RestKubeClientTest, UnreadableFilesAreRejectedAtCreate) {
  KubeConfig cfg;
  cfg.server = api_.url();
  cfg.source = "kubeconfig test";
  cfg.ca_file = "/nonexistent/ca.crt";
  auto c = RestKubeClient::Create(cfg);
  ASSERT_TRUE(absl::IsInvalidArgument(c.status()));
  EXPECT_NE(c.status().message().find("certificate-authority"), std::string::npos) << c.status();
}

}  // namespace
}  // namespace coach::kubeclient
