// Checks a TLS server's PEM material before gRPC is given it: gRPC reports a certificate
// that does not match its key only as a failure to listen, which reads as a busy port.

#pragma once

#include <string>

#include "absl/status/status.h"

namespace coach::server {

// `cert_pem`: a certificate chain, the server's first; `key_pem`: its private key;
// `client_ca_pem` (may be empty): one or more CA certificates. InvalidArgument whose message
// starts with "certificate", "key" or "client CA" (the caller names the flag): a part that
// holds no PEM object of its kind, or a key that is not the certificate's.
absl::Status CheckTlsMaterial(const std::string& cert_pem, const std::string& key_pem,
                              const std::string& client_ca_pem);

}  // namespace coach::server
