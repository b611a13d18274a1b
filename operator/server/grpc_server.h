#pragma once

// Builds and runs the gRPC server for a TrainingServiceImpl: plaintext by default,
// TLS when a certificate and key are given, mutual TLS when a client CA is given too.

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "operator/server/training_service_impl.h"

namespace coach::server {

struct GrpcServerOptions {
  // "host:port"; port 0 picks a free one (see GrpcServer::port()).
  std::string listen = "127.0.0.1:7450";
  // PEM contents (not paths). Both or neither.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // With a client CA, clients must present a certificate it signed.
  std::string tls_client_ca_pem;
};

class GrpcServer {
 public:
  // Errors: InvalidArgument (only one of cert/key; client CA without TLS),
  // Unavailable (cannot bind `listen`).
  static absl::StatusOr<std::unique_ptr<GrpcServer>> Start(TrainingServiceImpl* service,
                                                           const GrpcServerOptions& options);
  ~GrpcServer();

  int port() const { return port_; }
  bool tls() const { return tls_; }
  // Stops accepting calls, ends the streams, waits up to `grace` for calls in flight.
  void Shutdown(absl::Duration grace = absl::Seconds(5));

 private:
  GrpcServer(TrainingServiceImpl* service, std::unique_ptr<grpc::Server> server, int port, bool tls)
      : service_(service), server_(std::move(server)), port_(port), tls_(tls) {}
  TrainingServiceImpl* service_;
  std::unique_ptr<grpc::Server> server_;
  int port_;
  bool tls_;
  bool shut_down_ = false;
};

}  // namespace coach::server
