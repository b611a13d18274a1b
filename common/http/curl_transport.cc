#include "common/http/curl_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace coach::http {

struct CurlTransport::Pool {
  CURLSH* share = nullptr;
  std::array<std::mutex, CURL_LOCK_DATA_LAST> share_locks;
  std::mutex mu;
  std::vector<CURL*> idle;
  size_t max_idle = 0;

  static void Lock(CURL*, curl_lock_data data, curl_lock_access, void* user) {
    static_cast<Pool*>(user)->share_locks[data].lock();
  }
  static void Unlock(CURL*, curl_lock_data data, void* user) {
    static_cast<Pool*>(user)->share_locks[data].unlock();
  }

  CURL* Acquire() {
    {
      std::lock_guard<std::mutex> l(mu);
      if (!idle.empty()) {
        CURL* h = idle.back();
        idle.pop_back();
        return h;
      }
    }
    return curl_easy_init();
  }

  void Release(CURL* h, bool reusable) {
    if (reusable) {
      curl_easy_reset(h);  // options go, the handle's connection cache stays
      std::lock_guard<std::mutex> l(mu);
      if (idle.size() < max_idle) {
        idle.push_back(h);
        return;
      }
    }
    curl_easy_cleanup(h);
  }

  ~Pool() {
    for (CURL* h : idle) curl_easy_cleanup(h);
    if (share != nullptr) curl_share_cleanup(share);
  }
};

namespace {

// What the callbacks of one exchange write into.
struct Exchange {
  CURL* handle = nullptr;
  Response* response = nullptr;
  const SendOptions* options = nullptr;
  size_t max_body_bytes = 0;
  bool status_checked = false;
  bool streaming = false;
  bool stopped_by_sink = false;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const size_t len = size * n;
  if (!ex->status_checked) {
    // The status line is complete before the first body byte: stream only a 2xx answer, so an
    // error answer's body stays whole for the caller to map.
    ex->status_checked = true;
    long code = 0;
    curl_easy_getinfo(ex->handle, CURLINFO_RESPONSE_CODE, &code);
    ex->streaming = ex->options->sink != nullptr && code >= 200 && code < 300;
  }
  if (ex->streaming) {
    if (!(*ex->options->sink)(absl::string_view(data, len))) {
      ex->stopped_by_sink = true;
      return 0;  // CURLE_WRITE_ERROR ends the transfer
    }
    return len;
  }
  std::string& body = ex->response->body;
  if (ex->max_body_bytes == 0 || body.size() < ex->max_body_bytes) {
    body.append(data, len);
  } else {
    ex->response->body_cut = true;
  }
  return len;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* response = static_cast<Response*>(user);
  const size_t len = size * n;
  absl::string_view line(data, len);
  if (absl::StartsWith(line, "HTTP/")) {
    response->headers.clear();  // a new response (after a 100 Continue, say): only the last counts
    return len;
  }
  const size_t colon = line.find(':');
  if (colon == absl::string_view::npos) return len;  // the blank line that ends the headers
  response->headers.emplace_back(std::string(line.substr(0, colon)),
                                 std::string(absl::StripAsciiWhitespace(line.substr(colon + 1))));
  return len;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* ex = static_cast<Exchange*>(user);
  return ex->options->cancel != nullptr && ex->options->cancel->load() ? 1 : 0;
}

Failure Classify(CURLcode code, bool stopped_by_sink) {
  if (code == CURLE_OK) return Failure::kNone;
  if (stopped_by_sink) return Failure::kStoppedBySink;
  switch (code) {
    case CURLE_ABORTED_BY_CALLBACK:
      return Failure::kCancelled;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return Failure::kCouldNotConnect;
    case CURLE_OPERATION_TIMEDOUT:
      return Failure::kTimeout;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
      return Failure::kConnectionBroken;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return Failure::kBadUrl;
    default:
      break;
  }
  // Not in the switch: CURLE_SSL_CACERT is an alias of CURLE_PEER_FAILED_VERIFICATION in newer
  // libcurl, and a duplicate case does not compile.
  if (code == CURLE_SSL_CACERT || code == CURLE_PEER_FAILED_VERIFICATION ||
      code == CURLE_SSL_CERTPROBLEM || code == CURLE_SSL_CACERT_BADFILE) {
    return Failure::kTls;
  }
  return Failure::kOther;
}

void SetTls(CURL* h, const TlsOptions& tls, curl_blob* ca, curl_blob* cert, curl_blob* key) {
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, tls.insecure_skip_verify ? 0L : 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, tls.insecure_skip_verify ? 0L : 2L);
  // libcurl copies nothing with CURL_BLOB_NOCOPY: the options outlive every exchange.
  if (!tls.ca_pem.empty()) {
    *ca = {const_cast<char*>(tls.ca_pem.data()), tls.ca_pem.size(), CURL_BLOB_NOCOPY};
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, ca);
  } else if (!tls.ca_file.empty()) {
    curl_easy_setopt(h, CURLOPT_CAINFO, tls.ca_file.c_str());
  }
  if (!tls.client_cert_pem.empty()) {
    *cert = {const_cast<char*>(tls.client_cert_pem.data()), tls.client_cert_pem.size(),
             CURL_BLOB_NOCOPY};
    curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, cert);
    curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
  } else if (!tls.client_cert_file.empty()) {
    curl_easy_setopt(h, CURLOPT_SSLCERT, tls.client_cert_file.c_str());
  }
  if (!tls.client_key_pem.empty()) {
    *key = {const_cast<char*>(tls.client_key_pem.data()), tls.client_key_pem.size(),
            CURL_BLOB_NOCOPY};
    curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, key);
    curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
  } else if (!tls.client_key_file.empty()) {
    curl_easy_setopt(h, CURLOPT_SSLKEY, tls.client_key_file.c_str());
  }
}

void SetMethodAndBody(CURL* h, const Request& request) {
  if (request.method == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    return;
  }
  if (request.method != "POST") curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  // A DELETE without a body sends none; every other method sends its body, even an empty one
  // (so that curl sends Content-Length: 0 rather than waiting for a body).
  if (!request.body.empty() || request.method != "DELETE") {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<CurlTransport>> CurlTransport::Create(CurlTransportOptions options) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  auto pool = std::make_unique<Pool>();
  pool->max_idle = static_cast<size_t>(std::max(0, options.max_idle_handles));
  pool->share = curl_share_init();
  if (pool->share == nullptr) return absl::ResourceExhaustedError("curl_share_init failed");
  curl_share_setopt(pool->share, CURLSHOPT_LOCKFUNC, &Pool::Lock);
  curl_share_setopt(pool->share, CURLSHOPT_UNLOCKFUNC, &Pool::Unlock);
  curl_share_setopt(pool->share, CURLSHOPT_USERDATA, pool.get());
  curl_share_setopt(pool->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(pool->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  return std::unique_ptr<CurlTransport>(new CurlTransport(std::move(options), std::move(pool)));
}

CurlTransport::CurlTransport(CurlTransportOptions options, std::unique_ptr<Pool> pool)
    : options_(std::move(options)), pool_(std::move(pool)) {}

CurlTransport::~CurlTransport() = default;

Result CurlTransport::Send(const Request& request, const SendOptions& options) {
  Result result;
  CURL* h = pool_->Acquire();
  if (h == nullptr) {
    result.failure = Failure::kOther;
    result.error = "curl_easy_init failed";
    return result;
  }
  Exchange ex;
  ex.handle = h;
  ex.response = &result.response;
  ex.options = &options;
  ex.max_body_bytes = options_.max_body_bytes;
  char errbuf[CURL_ERROR_SIZE] = {0};

  curl_easy_setopt(h, CURLOPT_SHARE, pool_->share);
  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_USERAGENT, options_.user_agent.c_str());
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(options_.connect_timeout)));
  if (request.timeout > absl::ZeroDuration() && request.timeout != absl::InfiniteDuration()) {
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(absl::ToInt64Milliseconds(request.timeout)));
  }
  if (options_.http2)
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &ex);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &result.response);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &ex);
  curl_blob ca{}, cert{}, key{};
  SetTls(h, options_.tls, &ca, &cert, &key);

  // "Expect:" turns off Expect: 100-continue, which Python servers do not answer (curl would
  // wait a second before every large POST).
  std::vector<std::string> lines = {"Expect:"};
  for (const auto& [name, value] : request.headers)
    lines.push_back(absl::StrCat(name, ": ", value));
  curl_slist* headers = nullptr;
  for (const std::string& line : lines) headers = curl_slist_append(headers, line.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  SetMethodAndBody(h, request);

  const CURLcode code = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &result.response.status);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  curl_slist_free_all(headers);
  // Authorization headers carry tokens: leave no copy of ours behind.
  for (std::string& line : lines) std::fill(line.begin(), line.end(), '\0');

  result.failure = Classify(code, ex.stopped_by_sink);
  if (result.failure != Failure::kNone) {
    result.error = errbuf[0] != 0 ? errbuf : curl_easy_strerror(code);
  }
  pool_->Release(h, code == CURLE_OK);
  return result;
}

}  // namespace coach::http
