#pragma once

// The operator's admission webhooks, served: HTTPS on their own listener (never the gRPC API's),
// upstream's four paths (admission_review.h), the serving certificate from a directory
// (cert-manager's Secret mounted; re-read when it changes) or kept by the operator in a Secret
// (cert_rotator.h), refreshed in the background while the server runs. Every operator replica
// serves admission, the leader or not: the API server calls whichever the Service picks.

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/kube/client/kube_client.h"
#include "operator/metrics/registry.h"
#include "operator/server/http_server.h"
#include "operator/server/serving_certificate.h"
#include "operator/webhook/admission_review.h"
#include "operator/webhook/cert_rotator.h"

namespace coach::webhook {

struct AdmissionServerOptions {
  std::string listen;  // host:port
  // tls.crt and tls.key in this directory; empty: `rotator`'s Secret.
  std::string cert_dir;
  CertRotatorOptions rotator;
  // Client certificates must chain to this bundle (PEM); empty: any client.
  std::string client_ca_pem;
  // How often the certificate's source is read again (after a failure: every 5 s).
  absl::Duration refresh = absl::Seconds(30);
  // How long Start waits for a first certificate.
  absl::Duration first_certificate_wait = absl::Seconds(60);
  // Threads answering reviews (each review may wait on one API server lookup).
  int workers = 8;
  // Counters and latencies per webhook; may be null.
  metrics::Registry* registry = nullptr;
  Clock* clock = Clock::Real();
};

class AdmissionServer {
 public:
  // Gets a certificate (retrying for options.first_certificate_wait), then listens. `client`
  // (for the Secret and the webhook configurations) and `find_runtime` are used from the
  // server's threads; `client` must outlive the server.
  // Errors: InvalidArgument (options, a certificate that does not parse), Unavailable (cannot
  // listen), or the last error of the certificate's source when none came in time.
  static absl::StatusOr<std::unique_ptr<AdmissionServer>> Start(kubeclient::KubeClient* client,
                                                                RuntimeFinder find_runtime,
                                                                AdmissionServerOptions options);
  ~AdmissionServer();  // Stop()

  int port() const { return http_ == nullptr ? 0 : http_->port(); }
  // Stops refreshing and serving. Idempotent.
  void Stop();

 private:
  explicit AdmissionServer(AdmissionServerOptions options);
  // Reads the certificate's source once and serves what it gave.
  absl::Status Refresh();
  void RefreshLoop();

  const AdmissionServerOptions options_;
  std::unique_ptr<CertRotator> rotator_;  // null with cert_dir
  std::shared_ptr<server::ServingCertificate> certificate_;
  std::string served_cert_pem_;  // what certificate_ holds; touched by one thread at a time
  std::unique_ptr<server::HttpServer> http_;
  absl::Notification stop_;
  std::thread refresher_;
};

// The runtime a TrainJob names, read from the API server through `client` (each review: one
// GET).
RuntimeFinder RuntimesFromApiServer(kubeclient::KubeClient* client);

}  // namespace coach::webhook
