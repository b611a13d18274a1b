#pragma once

// AWS Signature Version 4 for S3 requests with an Authorization header and a signed payload
// hash in one chunk (AWS's "Signature Calculations for the Authorization Header: Transferring
// Payload in a Single Chunk"). Pure functions: the time comes in, nothing is sent. HMAC and
// SHA-256 are OpenSSL's.
//
// The caller builds the request: the canonical URI already encoded as S3 wants it (each byte
// outside A-Z a-z 0-9 - _ . ~ as %XX, '/' kept: http::PercentEncodePath), the query as raw
// names and values (encoded here), and the headers to sign, which must include `host`,
// `x-amz-date` (AmzDate(time)) and `x-amz-content-sha256` (the payload's Sha256Hex, the same
// value as payload_sha256_hex), exactly as they are sent.

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace coach::s3 {

struct SigV4Credentials {
  std::string access_key_id;
  std::string secret_access_key;  // only ever an HMAC key: never logged, never in a message
};

struct SigV4Request {
  std::string method;         // "GET", "PUT", ...
  std::string canonical_uri;  // encoded path, "/" at least: "/bucket/logs/worker%200.txt"
  std::vector<std::pair<std::string, std::string>> query;    // raw; any order
  std::vector<std::pair<std::string, std::string>> headers;  // names in any case; any order
  std::string payload_sha256_hex;
};

struct SigV4Signature {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;       // 64 lower-case hex digits
  std::string signed_headers;  // "host;range;x-amz-content-sha256;x-amz-date"
  std::string authorization;   // the Authorization header's value
};

SigV4Signature SignV4(const SigV4Request& request, const SigV4Credentials& credentials,
                      absl::string_view region, absl::string_view service, absl::Time time);

// "20130524T000000Z": the x-amz-date header (UTC).
std::string AmzDate(absl::Time time);

// Lower-case hex of SHA-256("bytes").
std::string Sha256Hex(absl::string_view bytes);

// The hash of an empty payload (GET, DELETE).
inline constexpr char kEmptyPayloadSha256[] =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// "a=1&b=x%2Fy": names and values percent-encoded (RFC 3986 unreserved characters kept, '/'
// encoded too), sorted by encoded name, then value. Use it as the URL's query as well, so the
// request sends what was signed.
std::string CanonicalQueryString(const std::vector<std::pair<std::string, std::string>>& query);

}  // namespace coach::s3
