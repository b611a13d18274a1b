// The part of Validate for replicas' progress reports (--progress-report-address and its CA):
// where pods reach the API, and what they trust there. And ReadCertificatesFlag, which the
// webhooks' client CA reads with too.

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "operator/cmd/settings.h"

namespace coach::cmd {
namespace {

// "host:port" or "[v6]:port": a host without scheme, path or spaces, a port 1..65535.
bool IsHostPort(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  std::string host = address.substr(0, colon);
  if (host.front() == '[') {
    if (host.back() != ']' || host.size() < 3) return false;
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return false;
  }
  for (char c : host) {
    if (c <= ' ' || c > '~' || c == '/' || c == '@' || c == '?' || c == '#') return false;
  }
  int port = 0;
  return absl::SimpleAtoi(address.substr(colon + 1), &port) && port >= 1 && port <= 65535;
}

}  // namespace

absl::Status ReadCertificatesFlag(const char* flag, const std::string& path, std::string* pem) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return UsageError(absl::StrCat(flag, ": cannot read ", path));
  if (!absl::StrContains(text.str(), "-----BEGIN CERTIFICATE-----")) {
    return UsageError(absl::StrCat(flag, ": ", path, " holds no PEM certificate"));
  }
  *pem = text.str();
  return absl::OkStatus();
}

absl::Status ValidateProgressReportFlags(const Flags& flags, bool kube, Settings* settings) {
  const std::string& address = flags.progress_report_address;
  if (address.empty()) {
    if (!flags.progress_report_ca_file.empty()) {
      return UsageError("--progress-report-ca-file: only with --progress-report-address");
    }
    return absl::OkStatus();
  }
  if (!kube) {
    return UsageError(
        "--progress-report-address: only with --backend=kube (local replicas' progress is read "
        "from their shim)");
  }
  if (!IsHostPort(address)) {
    return UsageError(absl::StrCat(
        "--progress-report-address: want host:port as replica pods reach the API (e.g. "
        "coach.coach-system.svc:7450), got \"",
        address, "\""));
  }
  if (!flags.tls_client_ca.empty()) {
    return UsageError(
        "--progress-report-address: replica pods have no client certificate for "
        "--tls-client-ca (mutual TLS); serve them without it or leave progress reports off");
  }
  if (flags.tls_cert.empty()) {
    if (!flags.progress_report_ca_file.empty()) {
      return UsageError("--progress-report-ca-file: only with TLS (--tls-cert)");
    }
  } else {
    if (flags.progress_report_ca_file.empty()) {
      return UsageError(
          "--progress-report-address: the API serves TLS: --progress-report-ca-file must name "
          "the CA certificate(s) replica pods trust for it");
    }
    if (absl::Status s =
            ReadCertificatesFlag("--progress-report-ca-file", flags.progress_report_ca_file,
                                 &settings->config.progress_report_ca_pem);
        !s.ok()) {
      return s;
    }
  }
  settings->config.progress_report_address = address;
  return absl::OkStatus();
}

}  // namespace coach::cmd
