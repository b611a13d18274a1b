#pragma once

// ObjectStore over S3's REST API (AWS S3, SeaweedFS, MinIO, Ceph RGW, ...), through common/http's
// Transport, signed with AWS Signature Version 4 (sigv4.h).
//
// Requests: path-style URLs (`endpoint/bucket/key`, the key percent-encoded byte by byte with
// '/' kept, as S3 canonicalizes it), a signed payload hash (x-amz-content-sha256) on every
// request. Put: PUT Object; Get: GET Object, streamed and stopped after max_bytes + 1 bytes;
// List: ListObjectsV2 (list-type=2) pages of at most list_page_size keys, following
// continuation tokens until max_keys are read; Delete: DELETE Object (S3 answers 204 for a key
// that is not there). No request is retried: Unavailable and Aborted tell the caller to try
// again later (object_store.h lists every code).
//
// Secrets: the secret access key is only an HMAC key. It is never logged and never part of a
// returned status; messages name the operation, the key, the HTTP status and S3's error code
// and message.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/http/transport.h"
#include "integrations/s3/object_store.h"

namespace coach::s3 {

struct S3Options {
  // http:// or https://, a host and an optional port, nothing else ("http://127.0.0.1:8333",
  // "https://s3.us-east-1.amazonaws.com"); a trailing '/' is dropped.
  std::string endpoint;
  // S3's bucket naming rules: 3-63 characters of a-z 0-9 . -, starting and ending with a letter or
  // digit, no "..", not an IPv4 address, none of the reserved prefixes (xn--, sthree-,
  // amzn-s3-demo-) and suffixes (-s3alias, --ol-s3, --x-s3, --table-s3, .mrap).
  std::string bucket;
  std::string region = "us-east-1";  // the signing region: non-empty, a-z 0-9 -
  std::string access_key_id;         // non-empty, printable ASCII without spaces
  std::string secret_access_key;     // non-empty
  // Each request, connection and transfer included; must be positive and finite.
  absl::Duration timeout = absl::Seconds(60);
  absl::Duration connect_timeout = absl::Seconds(10);
  // https only: the CA bundle (PEM file) to verify the store with; empty: the system's.
  std::string ca_file;
  // Keys asked for per ListObjectsV2 page (S3's own limit: 1000). Tests set it small.
  int list_page_size = 1000;
  // Signing time (x-amz-date) comes from here.
  Clock* clock = Clock::Real();
  // Not owned; must outlive the store. When null the store makes its own CurlTransport
  // (TLS verification on, error bodies cut at 64 KiB).
  http::Transport* transport = nullptr;
};

// Checks `options` and makes the store. InvalidArgument naming the field ("S3Options.bucket:
// ...") for any value the comments above refuse (a secret is never quoted); ResourceExhausted
// when libcurl cannot be set up. Nothing is sent: a wrong secret or an absent bucket shows on
// the first request.
absl::StatusOr<std::unique_ptr<ObjectStore>> MakeS3ObjectStore(S3Options options);

// The checks MakeS3ObjectStore applies, for callers that validate configuration early.
absl::Status ValidateS3Options(const S3Options& options);

// The first of S3's bucket naming rules `bucket` breaks, as InvalidArgument; OK when none.
absl::Status ValidateBucketName(absl::string_view bucket);

}  // namespace coach::s3
