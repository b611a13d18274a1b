#include "integrations/s3/s3_object_store.h"

#include <algorithm>
#include <fstream>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/http/curl_transport.h"
#include "common/http/url.h"
#include "integrations/s3/s3_xml.h"
#include "integrations/s3/sigv4.h"

namespace coach::s3 {
namespace {

// Error bodies of our own transport are cut here (2xx bodies go through sinks with their own
// bounds): an S3 error document is a few hundred bytes.
constexpr size_t kMaxErrorBodyBytes = 64 << 10;

absl::Status Field(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("S3Options.", field, ": ", why));
}

struct Endpoint {
  std::string base;  // "http://127.0.0.1:8333": scheme and authority, no trailing '/'
  std::string host;  // the Host header: the authority without a default port
  bool https = false;
};

absl::StatusOr<Endpoint> ParseEndpoint(absl::string_view endpoint) {
  Endpoint e;
  std::string lower = absl::AsciiStrToLower(endpoint);
  absl::string_view rest = lower;
  if (absl::ConsumePrefix(&rest, "https://")) {
    e.https = true;
  } else if (!absl::ConsumePrefix(&rest, "http://")) {
    return Field("endpoint", "must start with http:// or https://");
  }
  absl::ConsumeSuffix(&rest, "/");
  if (rest.find_first_of("/?#@") != absl::string_view::npos) {
    return Field("endpoint", "must be scheme://host[:port] only (no path, query, user info)");
  }
  absl::string_view host = rest, port;
  if (absl::StartsWith(rest, "[")) {  // an IPv6 literal
    const size_t close = rest.find(']');
    if (close == absl::string_view::npos) return Field("endpoint", "unterminated IPv6 address");
    host = rest.substr(0, close + 1);
    absl::string_view after = rest.substr(close + 1);
    if (!after.empty() && !absl::ConsumePrefix(&after, ":")) {
      return Field("endpoint", "junk after the IPv6 address");
    }
    port = after;
    for (char c : host.substr(1, host.size() - 2)) {
      if (!absl::ascii_isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') {
        return Field("endpoint", "bad IPv6 address");
      }
    }
  } else {
    const size_t colon = rest.rfind(':');
    if (colon != absl::string_view::npos) {
      host = rest.substr(0, colon);
      port = rest.substr(colon + 1);
      if (port.empty()) return Field("endpoint", "empty port");
    }
    for (char c : host) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') {
        return Field("endpoint", "the host may hold only letters, digits, '.', '-' and '_'");
      }
    }
  }
  if (host.empty() || host == "[]") return Field("endpoint", "no host");
  int port_number = 0;
  if (!port.empty()) {
    if (port.size() > 5 || !absl::c_all_of(port, [](char c) { return absl::ascii_isdigit(c); }) ||
        !absl::SimpleAtoi(port, &port_number) || port_number < 1 || port_number > 65535) {
      return Field("endpoint", "the port must be a number from 1 to 65535");
    }
  }
  const bool default_port =
      port.empty() || (e.https && port_number == 443) || (!e.https && port_number == 80);
  e.host = default_port ? std::string(host) : absl::StrCat(host, ":", port_number);
  e.base = absl::StrCat(e.https ? "https://" : "http://", e.host);
  return e;
}

bool IsIpv4(absl::string_view s) {
  std::vector<absl::string_view> parts = absl::StrSplit(s, '.');
  if (parts.size() != 4) return false;
  for (absl::string_view p : parts) {
    int v;
    if (p.empty() || p.size() > 3 || !absl::SimpleAtoi(p, &v) || v < 0 || v > 255) return false;
  }
  return true;
}

// ----- the store -------------------------------------------------------------------------------

class S3ObjectStore final : public ObjectStore {
 public:
  S3ObjectStore(S3Options options, Endpoint endpoint,
                std::unique_ptr<http::Transport> owned_transport)
      : options_(std::move(options)),
        endpoint_(std::move(endpoint)),
        owned_transport_(std::move(owned_transport)),
        transport_(owned_transport_ != nullptr ? owned_transport_.get() : options_.transport) {}

  absl::Status Put(absl::string_view key, absl::string_view bytes) override;
  absl::StatusOr<std::string> Get(absl::string_view key, size_t max_bytes) override;
  absl::StatusOr<ListResult> List(absl::string_view prefix, int max_keys) override;
  absl::Status Delete(absl::string_view key) override;

 private:
  // One signed exchange. `key` empty: the bucket itself.
  http::Result Send(const char* method, absl::string_view key,
                    const std::vector<std::pair<std::string, std::string>>& query,
                    absl::string_view body, const http::ChunkSink* sink) const;
  // The status for an exchange that did not succeed.
  absl::Status Failed(absl::string_view op, absl::string_view subject,
                      const http::Result& result) const;
  std::string Subject(absl::string_view key) const {
    return absl::StrCat("\"", absl::CHexEscape(key.substr(0, 200)), key.size() > 200 ? "..." : "",
                        "\" in bucket ", options_.bucket);
  }

  const S3Options options_;
  const Endpoint endpoint_;
  const std::unique_ptr<http::Transport> owned_transport_;
  http::Transport* const transport_;
};

http::Result S3ObjectStore::Send(const char* method, absl::string_view key,
                                 const std::vector<std::pair<std::string, std::string>>& query,
                                 absl::string_view body, const http::ChunkSink* sink) const {
  SigV4Request sr;
  sr.method = method;
  sr.canonical_uri = absl::StrCat("/", options_.bucket);
  if (!key.empty()) absl::StrAppend(&sr.canonical_uri, "/", http::PercentEncodePath(key));
  sr.query = query;
  sr.payload_sha256_hex = body.empty() ? std::string(kEmptyPayloadSha256) : Sha256Hex(body);
  const absl::Time now = options_.clock->Now();
  sr.headers = {{"Host", endpoint_.host},
                {"x-amz-content-sha256", sr.payload_sha256_hex},
                {"x-amz-date", AmzDate(now)}};
  const SigV4Signature sig =
      SignV4(sr, {options_.access_key_id, options_.secret_access_key}, options_.region, "s3", now);

  http::Request request;
  request.method = method;
  request.url = absl::StrCat(endpoint_.base, sr.canonical_uri);
  if (!query.empty()) absl::StrAppend(&request.url, "?", CanonicalQueryString(query));
  request.headers = std::move(sr.headers);
  request.headers.emplace_back("Authorization", sig.authorization);
  if (std::string(method) == "PUT") {
    // Otherwise libcurl labels a PUT body as a form (application/x-www-form-urlencoded).
    request.headers.emplace_back("Content-Type", "application/octet-stream");
  }
  request.body = std::string(body);
  request.timeout = options_.timeout;
  http::SendOptions send_options;
  send_options.sink = sink;
  return transport_->Send(request, send_options);
}

absl::Status S3ObjectStore::Failed(absl::string_view op, absl::string_view subject,
                                   const http::Result& result) const {
  if (!result.answered()) {
    return absl::UnavailableError(absl::StrCat("S3 ", op, " ", subject, ": ",
                                               http::FailureName(result.failure), " talking to ",
                                               endpoint_.base, ": ", result.error));
  }
  const long status = result.response.status;
  const S3Error error = ParseS3Error(result.response.body);
  const std::string text =
      absl::StrCat("S3 ", op, " ", subject, ": HTTP ", status, error.code.empty() ? "" : " ",
                   error.code, error.message.empty() ? "" : ": ", error.message);
  if (error.code == "RequestTimeout" || error.code == "SlowDown" || status == 408 ||
      status == 429 || status >= 500) {
    return absl::UnavailableError(text);
  }
  switch (status) {
    case 401:
    case 403:
      return absl::PermissionDeniedError(text);
    case 404:
      return absl::NotFoundError(text);
    case 409:
      return absl::AbortedError(text);
    case 400:
    case 411:
    case 413:
    case 414:
      return absl::InvalidArgumentError(text);
    default:
      return absl::InternalError(text);
  }
}

absl::Status S3ObjectStore::Put(absl::string_view key, absl::string_view bytes) {
  if (absl::Status s = ValidateKey(key); !s.ok()) return s;
  if (bytes.size() > kMaxPutBytes) {
    return absl::InvalidArgumentError(absl::StrCat("S3 PutObject ", Subject(key), ": ",
                                                   bytes.size(), " bytes (at most ", kMaxPutBytes,
                                                   " in one request)"));
  }
  const http::Result result = Send("PUT", key, {}, bytes, nullptr);
  if (result.success()) return absl::OkStatus();
  return Failed("PutObject", Subject(key), result);
}

absl::StatusOr<std::string> S3ObjectStore::Get(absl::string_view key, size_t max_bytes) {
  if (absl::Status s = ValidateKey(key); !s.ok()) return s;
  std::string out;
  const http::ChunkSink sink = [&](absl::string_view chunk) {
    if (chunk.size() > max_bytes - out.size()) return false;
    out.append(chunk.data(), chunk.size());
    return true;
  };
  const http::Result result = Send("GET", key, {}, "", &sink);
  if (result.failure == http::Failure::kStoppedBySink) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "S3 GetObject ", Subject(key), ": the object is larger than max_bytes (", max_bytes, ")"));
  }
  if (result.success()) return out;
  return Failed("GetObject", Subject(key), result);
}

absl::StatusOr<ListResult> S3ObjectStore::List(absl::string_view prefix, int max_keys) {
  if (absl::Status s = ValidatePrefix(prefix); !s.ok()) return s;
  const std::string subject = absl::StrCat("prefix ", Subject(prefix));
  if (max_keys < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("S3 ListObjectsV2 ", subject, ": max_keys is ", max_keys, " (at least 1)"));
  }
  ListResult out;
  std::string token;
  for (;;) {
    const int remaining = max_keys - static_cast<int>(out.objects.size());
    std::vector<std::pair<std::string, std::string>> query = {
        {"list-type", "2"},
        {"max-keys", absl::StrCat(std::min(remaining, options_.list_page_size))},
        {"prefix", std::string(prefix)}};
    if (!token.empty()) query.emplace_back("continuation-token", token);
    std::string body;
    bool too_large = false;
    const http::ChunkSink sink = [&](absl::string_view chunk) {
      if (chunk.size() > kMaxXmlBytes - body.size()) {
        too_large = true;
        return false;
      }
      body.append(chunk.data(), chunk.size());
      return true;
    };
    const http::Result result = Send("GET", "", query, "", &sink);
    if (too_large) {
      return absl::InternalError(absl::StrCat("S3 ListObjectsV2 ", subject, ": a page larger than ",
                                              kMaxXmlBytes, " bytes"));
    }
    if (!result.success()) return Failed("ListObjectsV2", subject, result);
    absl::StatusOr<ListPage> page = ParseListObjectsV2(body);
    if (!page.ok()) {
      return absl::InternalError(
          absl::StrCat("S3 ListObjectsV2 ", subject, ": ", page.status().message()));
    }
    for (ObjectInfo& object : page->objects) {
      if (static_cast<int>(out.objects.size()) == max_keys) {
        out.truncated = true;
        break;
      }
      out.objects.push_back(std::move(object));
    }
    if (!page->is_truncated) break;
    if (static_cast<int>(out.objects.size()) == max_keys) {
      out.truncated = true;
      break;
    }
    // A token that does not move would page forever.
    if (page->next_continuation_token == token) {
      return absl::InternalError(
          absl::StrCat("S3 ListObjectsV2 ", subject, ": the store repeated a continuation token"));
    }
    token = std::move(page->next_continuation_token);
  }
  return out;
}

absl::Status S3ObjectStore::Delete(absl::string_view key) {
  if (absl::Status s = ValidateKey(key); !s.ok()) return s;
  const http::Result result = Send("DELETE", key, {}, "", nullptr);
  if (result.success()) return absl::OkStatus();
  // S3 answers 204 for an absent key; a store that says NoSuchKey means the same.
  if (result.answered() && result.response.status == 404 &&
      ParseS3Error(result.response.body).code == "NoSuchKey") {
    return absl::OkStatus();
  }
  return Failed("DeleteObject", Subject(key), result);
}

}  // namespace

absl::Status ValidateBucketName(absl::string_view b) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("bucket \"", absl::CHexEscape(b.substr(0, 80)), "\" ", why));
  };
  if (b.size() < 3 || b.size() > 63) return bad("must be 3 to 63 characters long");
  for (char c : b) {
    if (!absl::ascii_islower(static_cast<unsigned char>(c)) &&
        !absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '.' && c != '-') {
      return bad("may hold only lower-case letters, digits, '.' and '-'");
    }
  }
  if (!absl::ascii_isalnum(static_cast<unsigned char>(b.front())) ||
      !absl::ascii_isalnum(static_cast<unsigned char>(b.back()))) {
    return bad("must begin and end with a letter or digit");
  }
  if (absl::StrContains(b, "..")) return bad("must not hold two adjacent periods");
  if (IsIpv4(b)) return bad("must not look like an IP address");
  for (absl::string_view prefix : {"xn--", "sthree-", "amzn-s3-demo-"}) {
    if (absl::StartsWith(b, prefix)) return bad(absl::StrCat("must not begin with ", prefix));
  }
  for (absl::string_view suffix : {"-s3alias", "--ol-s3", "--x-s3", "--table-s3", ".mrap"}) {
    if (absl::EndsWith(b, suffix)) return bad(absl::StrCat("must not end with ", suffix));
  }
  return absl::OkStatus();
}

absl::Status ValidateS3Options(const S3Options& o) {
  absl::StatusOr<Endpoint> endpoint = ParseEndpoint(o.endpoint);
  if (!endpoint.ok()) return endpoint.status();
  if (absl::Status s = ValidateBucketName(o.bucket); !s.ok()) {
    return Field("bucket", s.message());
  }
  if (o.region.empty() || !absl::c_all_of(o.region, [](char c) {
        return absl::ascii_islower(static_cast<unsigned char>(c)) ||
               absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '-';
      })) {
    return Field("region", "must be non-empty lower-case letters, digits and '-' (us-east-1)");
  }
  // The key id goes into the Authorization header's Credential=id/date/...: no separators.
  if (o.access_key_id.empty() || !absl::c_all_of(o.access_key_id, [](char c) {
        return c > ' ' && c < 0x7F && c != '/' && c != ',' && c != '=';
      })) {
    return Field("access_key_id",
                 "must be non-empty printable ASCII without spaces, '/', ',', '='");
  }
  if (o.secret_access_key.empty()) return Field("secret_access_key", "is empty");
  if (o.timeout <= absl::ZeroDuration() || o.timeout == absl::InfiniteDuration()) {
    return Field("timeout", "must be positive and finite");
  }
  if (o.connect_timeout <= absl::ZeroDuration() || o.connect_timeout == absl::InfiniteDuration()) {
    return Field("connect_timeout", "must be positive and finite");
  }
  if (!o.ca_file.empty()) {
    if (!endpoint->https) return Field("ca_file", "is set but the endpoint is not https://");
    std::ifstream in(o.ca_file);
    if (!in) return Field("ca_file", absl::StrCat("cannot read ", o.ca_file));
  }
  if (o.list_page_size < 1 || o.list_page_size > 1000) {
    return Field("list_page_size", absl::StrCat("is ", o.list_page_size, " (1 to 1000)"));
  }
  if (o.clock == nullptr) return Field("clock", "is null");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ObjectStore>> MakeS3ObjectStore(S3Options options) {
  if (absl::Status s = ValidateS3Options(options); !s.ok()) return s;
  absl::StatusOr<Endpoint> endpoint = ParseEndpoint(options.endpoint);
  if (!endpoint.ok()) return endpoint.status();
  std::unique_ptr<http::Transport> owned;
  if (options.transport == nullptr) {
    http::CurlTransportOptions t;
    t.tls.ca_file = options.ca_file;
    t.connect_timeout = options.connect_timeout;
    t.user_agent = "coach-s3";
    t.max_body_bytes = kMaxErrorBodyBytes;
    absl::StatusOr<std::unique_ptr<http::CurlTransport>> curl =
        http::CurlTransport::Create(std::move(t));
    if (!curl.ok()) return curl.status();
    owned = std::move(curl).value();
  }
  return std::unique_ptr<ObjectStore>(
      new S3ObjectStore(std::move(options), std::move(endpoint).value(), std::move(owned)));
}

}  // namespace coach::s3
