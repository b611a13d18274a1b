#pragma once

// Certificates for TLS tests, made with OpenSSL when the test runs (ECDSA P-256, valid from
// an hour ago for a day): a self-signed CA and the certificates it signs, so that no test
// commits a key or breaks when a committed certificate expires.

#include <string>

#include "absl/status/statusor.h"

namespace coach::server::testing {

struct TestCertificate {
  std::string cert_pem;
  std::string key_pem;
};

// A self-signed CA certificate with subject CN `name`. Errors: Internal (OpenSSL failed).
absl::StatusOr<TestCertificate> MakeTestCa(const std::string& name);

// A certificate `ca` signed for CN `common_name`, valid for DNS "localhost" and IP
// 127.0.0.1, as a server and as a client. Errors: InvalidArgument (`ca` does not parse),
// Internal (OpenSSL failed).
absl::StatusOr<TestCertificate> MakeTestLeaf(const TestCertificate& ca,
                                             const std::string& common_name);

}  // namespace coach::server::testing
