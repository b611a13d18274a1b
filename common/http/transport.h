#pragma once

// Transport: one HTTP exchange, the boundary every REST client of coach (the Kubernetes API
// client, the MLflow tracking client, the benches) sends its requests through. What a
// client adds on top (auth headers, rate limits, retries, mapping answers to absl::Status)
// stays in that client: their rules differ, the wire does not.
//
// Send never retries and never maps an HTTP status to an error: any answer the server gave
// (2xx or not) is a Result with `failure == kNone` and the status in `response.status`.
// `failure` says why there was no complete answer. Implementations are thread-safe.

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace coach::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method = "GET";  // GET, POST, PUT, PATCH, DELETE
  std::string url;             // absolute, query included (url.h builds one)
  Headers headers;             // sent in this order; "Expect: 100-continue" is never sent
  std::string body;            // sent for every method but GET, and for DELETE when not empty
  // The whole exchange, streams included; InfiniteDuration (or <= 0): no limit.
  absl::Duration timeout = absl::InfiniteDuration();
};

struct Response {
  long status = 0;  // 0: no status line was received
  Headers headers;  // of the final response, names as the server spelled them
  std::string
      body;  // the whole body; for a streamed 2xx answer only what was not streamed (nothing)
  // The body went past the transport's bound (CurlTransportOptions::max_body_bytes): `body` holds
  // only its beginning.
  bool body_cut = false;

  // The value of the last header named `name` (case-insensitive), without surrounding spaces.
  std::optional<std::string> Header(absl::string_view name) const;
};

// Why an exchange ended without a complete answer.
enum class Failure {
  kNone,              // the server answered (any status)
  kCouldNotConnect,   // no connection: refused, or the host or proxy name did not resolve; the
                      // request provably never reached the server
  kTimeout,           // the request's timeout (or the connect timeout) passed
  kConnectionBroken,  // the connection failed mid-exchange (send/receive error, nothing or part
                      // of an answer, TLS handshake failure)
  kTls,               // the peer's certificate or our own could not be used or verified
  kBadUrl,            // malformed URL or unsupported scheme
  kCancelled,         // SendOptions::cancel was raised
  kStoppedBySink,     // SendOptions::sink returned false
  kOther,             // anything else libcurl reports
};

// A short name for logs ("timeout", "tls", ...).
absl::string_view FailureName(Failure failure);

struct Result {
  Failure failure = Failure::kNone;
  std::string error;  // what failed, in words, when failure != kNone
  // Whatever arrived; status may be set even when failure != kNone (a stream that broke).
  Response response;

  bool answered() const { return failure == Failure::kNone; }
  bool success() const { return answered() && response.status >= 200 && response.status < 300; }
};

// Receives a streamed body chunk by chunk; false stops the exchange (kStoppedBySink).
using ChunkSink = std::function<bool(absl::string_view chunk)>;

struct SendOptions {
  // When set, the body of a 2xx answer goes to the sink as it arrives instead of into
  // response.body (watches, log follows). The body of any other answer is buffered as usual,
  // so a failed stream still carries the server's error.
  const ChunkSink* sink = nullptr;
  // Checked while the exchange runs (at least every second); raised: kCancelled.
  const std::atomic<bool>* cancel = nullptr;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual Result Send(const Request& request, const SendOptions& options = {}) = 0;
};

}  // namespace coach::http
