// S3ObjectStore against a scripted Transport: option checks, the requests it sends (URLs, signed
// headers), how answers map to codes, paging and bounds. object_store_contract_test runs it
// against a real store.
#include "integrations/s3/s3_object_store.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integrations/s3/s3_xml.h"
#include "integrations/s3/sigv4.h"

namespace coach::s3 {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSecret[] = "s3cr3t-DO-NOT-PRINT";

// Answers each request with what `handler` returns, streaming a 2xx body to the sink in chunks
// as CurlTransport does.
class ScriptedTransport : public http::Transport {
 public:
  std::function<http::Result(const http::Request&)> handler;

  http::Result Send(const http::Request& request, const http::SendOptions& options) override {
    {
      absl::MutexLock l(&mu_);
      requests_.push_back(request);
    }
    http::Result r = handler(request);
    if (options.sink != nullptr && r.success()) {
      std::string body = std::move(r.response.body);
      r.response.body.clear();
      for (size_t i = 0; i < body.size(); i += 1000) {
        if (!(*options.sink)(absl::string_view(body).substr(i, 1000))) {
          r.failure = http::Failure::kStoppedBySink;
          r.error = "stopped by sink";
          break;
        }
      }
    }
    return r;
  }

  std::vector<http::Request> requests() {
    absl::MutexLock l(&mu_);
    return requests_;
  }

 private:
  absl::Mutex mu_;
  std::vector<http::Request> requests_;
};

http::Result Answer(long status, std::string body = "") {
  http::Result r;
  r.response.status = status;
  r.response.body = std::move(body);
  return r;
}

std::string ErrorXml(absl::string_view code, absl::string_view message) {
  return absl::StrCat("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>", code,
                      "</Code><Message>", message, "</Message></Error>");
}

std::string Header(const http::Request& r, absl::string_view name) {
  for (const auto& [n, v] : r.headers) {
    if (absl::EqualsIgnoreCase(n, name)) return v;
  }
  return "<none>";
}

std::map<std::string, std::string> Query(const http::Request& r) {
  std::map<std::string, std::string> out;
  const size_t q = r.url.find('?');
  if (q == std::string::npos) return out;
  for (absl::string_view kv : absl::StrSplit(r.url.substr(q + 1), '&')) {
    std::pair<std::string, std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    out[p.first] = p.second;
  }
  return out;
}

class S3ObjectStoreTest : public ::testing::Test {
 protected:
  S3Options Options() {
    S3Options o;
    o.endpoint = "http://127.0.0.1:9000";
    o.bucket = "coach-logs";
    o.access_key_id = "AKIDEXAMPLE";
    o.secret_access_key = kSecret;
    o.clock = &clock_;
    o.transport = &transport_;
    return o;
  }
  std::unique_ptr<ObjectStore> Store(S3Options o) {
    absl::StatusOr<std::unique_ptr<ObjectStore>> s = MakeS3ObjectStore(std::move(o));
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  std::unique_ptr<ObjectStore> Store() { return Store(Options()); }

  FakeClock clock_{
      absl::FromCivil(absl::CivilSecond(2026, 12, 1, 10, 20, 30), absl::UTCTimeZone())};
  ScriptedTransport transport_;
};

TEST_F(S3ObjectStoreTest, OptionsAreCheckedNamingTheField) {
  struct Case {
    std::function<void(S3Options&)> change;
    std::string field;
  };
  const std::vector<Case> cases = {
      {[](S3Options& o) { o.endpoint = ""; }, "endpoint"},
      {[](S3Options& o) { o.endpoint = "ftp://h"; }, "endpoint"},
      {[](S3Options& o) { o.endpoint = "h:9000"; }, "endpoint"},
      {[](S3Options& o) { o.endpoint = "http://"; }, "endpoint"},
      {[](S3Options& o) { o.endpoint = "http://h/path"; }, "endpoint"},
      {[](S3Options& o) { o.endpoint = "http://u:p@h"; }, "endpoint"},
      {[](S3Options& o) { o.endpoint = "http://h?x=1"; }, "endpoint"},
      {[](S3Options& o) { o.endpoint = "http://h:0"; }, "endpoint"},
      {[](S3Options& o) { o.endpoint = "http://h:65536"; }, "endpoint"},
      {[](S3Options& o) { o.endpoint = "http://h:x"; }, "endpoint"},
      {[](S3Options& o) { o.endpoint = "http://h:"; }, "endpoint"},
      {[](S3Options& o) { o.endpoint = "http://h h"; }, "endpoint"},
      {[](S3Options& o) { o.endpoint = "http://[::1"; }, "endpoint"},
      {[](S3Options& o) { o.bucket = ""; }, "bucket"},
      {[](S3Options& o) { o.bucket = "ab"; }, "bucket"},
      {[](S3Options& o) { o.bucket = std::string(64, 'a'); }, "bucket"},
      {[](S3Options& o) { o.bucket = "Coach-Logs"; }, "bucket"},
      {[](S3Options& o) { o.bucket = "coach_logs"; }, "bucket"},
      {[](S3Options& o) { o.bucket = "-coach"; }, "bucket"},
      {[](S3Options& o) { o.bucket = "coach-"; }, "bucket"},
      {[](S3Options& o) { o.bucket = "coach..logs"; }, "bucket"},
      {[](S3Options& o) { o.bucket = "192.168.5.4"; }, "bucket"},
      {[](S3Options& o) { o.bucket = "xn--coach"; }, "bucket"},
      {[](S3Options& o) { o.bucket = "sthree-coach"; }, "bucket"},
      {[](S3Options& o) { o.bucket = "coach-s3alias"; }, "bucket"},
      {[](S3Options& o) { o.bucket = "coach--ol-s3"; }, "bucket"},
      {[](S3Options& o) { o.bucket = "coach.mrap"; }, "bucket"},
      {[](S3Options& o) { o.region = ""; }, "region"},
      {[](S3Options& o) { o.region = "US-EAST-1"; }, "region"},
      {[](S3Options& o) { o.access_key_id = ""; }, "access_key_id"},
      {[](S3Options& o) { o.access_key_id = "a/b"; }, "access_key_id"},
      {[](S3Options& o) { o.access_key_id = "a b"; }, "access_key_id"},
      {[](S3Options& o) { o.secret_access_key = ""; }, "secret_access_key"},
      {[](S3Options& o) { o.timeout = absl::ZeroDuration(); }, "timeout"},
      {[](S3Options& o) { o.timeout = absl::InfiniteDuration(); }, "timeout"},
      {[](S3Options& o) { o.connect_timeout = -absl::Seconds(1); }, "connect_timeout"},
      {[](S3Options& o) { o.ca_file = "/etc/hostname"; }, "ca_file"},  // http endpoint
      {[](S3Options& o) {
         o.endpoint = "https://h";
         o.ca_file = "/nonexistent/ca.pem";
       },
       "ca_file"},
      {[](S3Options& o) { o.list_page_size = 0; }, "list_page_size"},
      {[](S3Options& o) { o.list_page_size = 1001; }, "list_page_size"},
      {[](S3Options& o) { o.clock = nullptr; }, "clock"},
  };
  for (const Case& c : cases) {
    S3Options o = Options();
    c.change(o);
    absl::StatusOr<std::unique_ptr<ObjectStore>> s = MakeS3ObjectStore(o);
    ASSERT_TRUE(absl::IsInvalidArgument(s.status())) << c.field << ": " << s.status();
    EXPECT_THAT(s.status().message(), HasSubstr("S3Options." + c.field + ":"));
    EXPECT_THAT(s.status().message(), Not(HasSubstr(kSecret)));
  }
  EXPECT_TRUE(transport_.requests().empty());
}

TEST_F(S3ObjectStoreTest, AcceptsUsualEndpointsAndBuckets) {
  for (const char* endpoint : {"http://127.0.0.1:8333", "https://s3.us-east-1.amazonaws.com",
                               "HTTP://MinIO.local:9000/", "http://[::1]:8333", "https://h:443"}) {
    S3Options o = Options();
    o.endpoint = endpoint;
    EXPECT_TRUE(ValidateS3Options(o).ok()) << endpoint << ": " << ValidateS3Options(o);
  }
  for (const char* bucket : {"abc", "coach-logs", "my.bucket.1", "1bucket"}) {
    EXPECT_TRUE(ValidateBucketName(bucket).ok()) << bucket;
  }
}

TEST_F(S3ObjectStoreTest, PutSendsASignedPathStyleRequest) {
  transport_.handler = [](const http::Request&) { return Answer(200); };
  ASSERT_TRUE(Store()->Put("logs/job 1/\xC3\xA9+x.txt", "hello").ok());
  ASSERT_EQ(transport_.requests().size(), 1u);
  const http::Request r = transport_.requests()[0];
  EXPECT_EQ(r.method, "PUT");
  EXPECT_EQ(r.url, "http://127.0.0.1:9000/coach-logs/logs/job%201/%C3%A9%2Bx.txt");
  EXPECT_EQ(r.body, "hello");
  EXPECT_EQ(Header(r, "Host"), "127.0.0.1:9000");
  EXPECT_EQ(Header(r, "x-amz-content-sha256"), Sha256Hex("hello"));
  EXPECT_EQ(Header(r, "x-amz-date"), "20261201T102030Z");
  EXPECT_EQ(Header(r, "Content-Type"), "application/octet-stream");
  EXPECT_EQ(r.timeout, absl::Seconds(60));

  // The Authorization header is the signature of exactly what was sent.
  SigV4Request sr;
  sr.method = "PUT";
  sr.canonical_uri = "/coach-logs/logs/job%201/%C3%A9%2Bx.txt";
  sr.headers = {{"host", "127.0.0.1:9000"},
                {"x-amz-content-sha256", Sha256Hex("hello")},
                {"x-amz-date", "20261201T102030Z"}};
  sr.payload_sha256_hex = Sha256Hex("hello");
  EXPECT_EQ(Header(r, "Authorization"),
            SignV4(sr, {"AKIDEXAMPLE", kSecret}, "us-east-1", "s3", clock_.Now()).authorization);
  EXPECT_THAT(Header(r, "Authorization"),
              HasSubstr("Credential=AKIDEXAMPLE/20261201/us-east-1/s3/aws4_request,"
                        "SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature="));
  for (const auto& [name, value] : r.headers) EXPECT_THAT(value, Not(HasSubstr(kSecret)));
}

TEST_F(S3ObjectStoreTest, DefaultPortsLeaveTheHostHeader) {
  transport_.handler = [](const http::Request&) { return Answer(204); };
  S3Options o = Options();
  o.endpoint = "https://S3.Example.com:443/";
  ASSERT_TRUE(Store(o)->Delete("k").ok());
  EXPECT_EQ(transport_.requests()[0].url, "https://s3.example.com/coach-logs/k");
  EXPECT_EQ(Header(transport_.requests()[0], "Host"), "s3.example.com");
}

TEST_F(S3ObjectStoreTest, BadKeysAreRefusedBeforeSending) {
  transport_.handler = [](const http::Request&) { return Answer(200); };
  auto store = Store();
  for (const std::string& key :
       {std::string(""), std::string("/a"), std::string("a/"), std::string("a//b"),
        std::string("a/./b"), std::string("a/../b"), std::string(".."), std::string("a\\b"),
        std::string("a\nb"), std::string("a\x7f"), std::string("\xC3"), std::string("\xC0\xAF"),
        std::string("\xED\xA0\x80"), std::string(1025, 'k')}) {
    EXPECT_TRUE(absl::IsInvalidArgument(store->Put(key, "x"))) << key;
    EXPECT_TRUE(absl::IsInvalidArgument(store->Get(key, 10).status())) << key;
    EXPECT_TRUE(absl::IsInvalidArgument(store->Delete(key))) << key;
  }
  EXPECT_TRUE(absl::IsInvalidArgument(store->List("/a", 10).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store->List("a//", 10).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store->List("a", 0).status()));
  EXPECT_TRUE(transport_.requests().empty());
  EXPECT_TRUE(ValidateKey(std::string(1024, 'k')).ok());
  EXPECT_TRUE(ValidateKey(" a b /c.d/..e/\xF0\x9F\x98\x80").ok());
  EXPECT_TRUE(ValidatePrefix("").ok());
  EXPECT_TRUE(ValidatePrefix("logs/").ok());
}

TEST_F(S3ObjectStoreTest, AnswersMapToCodes) {
  struct Case {
    http::Result result;
    absl::StatusCode code;
  };
  http::Result refused;
  refused.failure = http::Failure::kCouldNotConnect;
  refused.error = "Connection refused";
  http::Result timeout;
  timeout.failure = http::Failure::kTimeout;
  http::Result broken;
  broken.failure = http::Failure::kConnectionBroken;
  http::Result tls;
  tls.failure = http::Failure::kTls;
  const std::vector<Case> cases = {
      {Answer(403, ErrorXml("SignatureDoesNotMatch",
                            "The request signature we calculated does "
                            "not match the signature you provided.")),
       absl::StatusCode::kPermissionDenied},
      {Answer(403, ErrorXml("InvalidAccessKeyId", "no such key")),
       absl::StatusCode::kPermissionDenied},
      {Answer(401, ""), absl::StatusCode::kPermissionDenied},
      {Answer(404, ErrorXml("NoSuchBucket", "The specified bucket does not exist")),
       absl::StatusCode::kNotFound},
      {Answer(400, ErrorXml("InvalidArgument", "bad")), absl::StatusCode::kInvalidArgument},
      {Answer(400, ErrorXml("RequestTimeout", "slow")), absl::StatusCode::kUnavailable},
      {Answer(409, ErrorXml("OperationAborted", "busy")), absl::StatusCode::kAborted},
      {Answer(429, ""), absl::StatusCode::kUnavailable},
      {Answer(500, ErrorXml("InternalError", "oops")), absl::StatusCode::kUnavailable},
      {Answer(503, ErrorXml("SlowDown", "slow down")), absl::StatusCode::kUnavailable},
      {Answer(502, "<html>bad gateway</html>"), absl::StatusCode::kUnavailable},
      {Answer(301, ErrorXml("PermanentRedirect", "elsewhere")), absl::StatusCode::kInternal},
      {refused, absl::StatusCode::kUnavailable},
      {timeout, absl::StatusCode::kUnavailable},
      {broken, absl::StatusCode::kUnavailable},
      {tls, absl::StatusCode::kUnavailable},
  };
  auto store = Store();
  for (const Case& c : cases) {
    transport_.handler = [&](const http::Request&) { return c.result; };
    for (const absl::Status& s : {store->Put("a/b", "x"), store->Get("a/b", 100).status(),
                                  store->List("a/", 10).status(), store->Delete("a/b")}) {
      EXPECT_EQ(s.code(), c.code) << s;
      EXPECT_THAT(s.message(), Not(HasSubstr(kSecret)));
      EXPECT_THAT(s.message(), HasSubstr("coach-logs"));
      if (c.result.answered()) {
        EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("HTTP ", c.result.response.status)));
      }
    }
  }
  transport_.handler = [](const http::Request&) {
    return Answer(403, ErrorXml("AccessDenied", "Access Denied"));
  };
  absl::Status s = store->Put("a/b", "x");
  EXPECT_EQ(s.message(),
            "S3 PutObject \"a/b\" in bucket coach-logs: HTTP 403 AccessDenied: Access Denied");
}

TEST_F(S3ObjectStoreTest, GetNotFoundAndBounds) {
  auto store = Store();
  transport_.handler = [](const http::Request&) {
    return Answer(404, ErrorXml("NoSuchKey", "The specified key does not exist."));
  };
  EXPECT_TRUE(absl::IsNotFound(store->Get("a", 10).status()));

  const std::string object(2500, 'o');
  transport_.handler = [&](const http::Request&) { return Answer(200, object); };
  absl::StatusOr<std::string> got = store->Get("a", 2500);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, object);
  got = store->Get("a", 2499);
  EXPECT_TRUE(absl::IsResourceExhausted(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("max_bytes (2499)"));
  EXPECT_TRUE(absl::IsResourceExhausted(store->Get("a", 0).status()));

  transport_.handler = [&](const http::Request&) { return Answer(200, ""); };
  got = store->Get("a", 0);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, "");
}

TEST_F(S3ObjectStoreTest, DeleteIsIdempotent) {
  auto store = Store();
  transport_.handler = [](const http::Request&) { return Answer(204); };
  EXPECT_TRUE(store->Delete("a").ok());
  EXPECT_EQ(transport_.requests()[0].method, "DELETE");
  transport_.handler = [](const http::Request&) {
    return Answer(404, ErrorXml("NoSuchKey", "gone"));
  };
  EXPECT_TRUE(store->Delete("a").ok());
  transport_.handler = [](const http::Request&) {
    return Answer(404, ErrorXml("NoSuchBucket", "no bucket"));
  };
  EXPECT_TRUE(absl::IsNotFound(store->Delete("a")));
}

std::string Page(const std::vector<std::string>& keys, const std::string& next_token) {
  std::string xml = "<?xml version=\"1.0\"?><ListBucketResult><Name>coach-logs</Name>";
  absl::StrAppend(&xml, "<IsTruncated>", next_token.empty() ? "false" : "true", "</IsTruncated>");
  if (!next_token.empty()) {
    absl::StrAppend(&xml, "<NextContinuationToken>", next_token, "</NextContinuationToken>");
  }
  for (const std::string& k : keys) {
    absl::StrAppend(&xml, "<Contents><Key>", k, "</Key><Size>", k.size(),
                    "</Size><LastModified>2026-12-01T10:00:00.000Z</LastModified></Contents>");
  }
  return xml + "</ListBucketResult>";
}

TEST_F(S3ObjectStoreTest, ListFollowsContinuationTokensUpToTheBound) {
  // Seven keys served two per page; tokens "t1", "t2", "t3".
  const std::vector<std::string> keys = {"p/0", "p/1", "p/2", "p/3", "p/4", "p/5", "p/6"};
  transport_.handler = [&](const http::Request& r) {
    std::map<std::string, std::string> q = Query(r);
    const int page = q.count("continuation-token") ? q["continuation-token"][1] - '0' : 0;
    const int max = std::stoi(q["max-keys"]);
    std::vector<std::string> some;
    for (int i = page * 2; i < static_cast<int>(keys.size()) && i < page * 2 + std::min(max, 2);
         ++i) {
      some.push_back(keys[i]);
    }
    const bool more = page * 2 + static_cast<int>(some.size()) < static_cast<int>(keys.size());
    return Answer(200, Page(some, more ? absl::StrCat("t", page + 1) : ""));
  };
  S3Options o = Options();
  o.list_page_size = 2;
  auto store = Store(o);

  absl::StatusOr<ListResult> all = store->List("p/", 100);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->objects.size(), 7u);
  EXPECT_FALSE(all->truncated);
  EXPECT_EQ(all->objects[6].key, "p/6");
  EXPECT_EQ(all->objects[6].size, 3u);
  EXPECT_EQ(all->objects[6].last_modified,
            absl::FromCivil(absl::CivilSecond(2026, 12, 1, 10, 0, 0), absl::UTCTimeZone()));
  std::vector<http::Request> sent = transport_.requests();
  ASSERT_EQ(sent.size(), 4u);
  EXPECT_EQ(sent[0].url, "http://127.0.0.1:9000/coach-logs?list-type=2&max-keys=2&prefix=p%2F");
  EXPECT_EQ(Query(sent[1])["continuation-token"], "t1");
  EXPECT_EQ(Query(sent[3])["continuation-token"], "t3");

  absl::StatusOr<ListResult> some = store->List("p/", 3);
  ASSERT_TRUE(some.ok()) << some.status();
  ASSERT_EQ(some->objects.size(), 3u);
  EXPECT_TRUE(some->truncated);
  sent = transport_.requests();
  ASSERT_EQ(sent.size(), 6u);
  EXPECT_EQ(Query(sent[5])["max-keys"], "1");  // only what is still wanted
}

TEST_F(S3ObjectStoreTest, ListRefusesBrokenAnswers) {
  auto store = Store();
  transport_.handler = [](const http::Request&) { return Answer(200, "<nonsense"); };
  EXPECT_TRUE(absl::IsInternal(store->List("", 10).status()));
  transport_.handler = [](const http::Request&) { return Answer(200, Page({"a"}, "same")); };
  absl::Status s = store->List("", 10).status();
  EXPECT_TRUE(absl::IsInternal(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("repeated a continuation token"));
  transport_.handler = [](const http::Request&) {
    return Answer(200, std::string(kMaxXmlBytes + 1, ' '));
  };
  s = store->List("", 10).status();
  EXPECT_TRUE(absl::IsInternal(s)) << s;
}

}  // namespace
}  // namespace coach::s3
