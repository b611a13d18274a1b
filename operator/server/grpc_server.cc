#include "operator/server/grpc_server.h"

#include <grpc/support/time.h>

#include "absl/strings/str_cat.h"
#include "operator/server/tls_material.h"

namespace coach::server {

absl::StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Start(TrainingServiceImpl* service,
                                                              const GrpcServerOptions& options) {
  const bool tls = !options.tls_cert_pem.empty() || !options.tls_key_pem.empty();
  if (tls && (options.tls_cert_pem.empty() || options.tls_key_pem.empty())) {
    return absl::InvalidArgumentError("TLS needs both a certificate and a key");
  }
  if (!tls && !options.tls_client_ca_pem.empty()) {
    return absl::InvalidArgumentError("a client CA needs TLS (a certificate and a key)");
  }
  if (tls) {
    absl::Status material =
        CheckTlsMaterial(options.tls_cert_pem, options.tls_key_pem, options.tls_client_ca_pem);
    if (!material.ok()) return material;
  }
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (tls) {
    grpc::SslServerCredentialsOptions ssl(
        options.tls_client_ca_pem.empty()
            ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
            : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_root_certs = options.tls_client_ca_pem;
    ssl.pem_key_cert_pairs.push_back({options.tls_key_pem, options.tls_cert_pem});
    creds = grpc::SslServerCredentials(ssl);
  } else {
    creds = grpc::InsecureServerCredentials();
  }
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options.listen, creds, &port);
  builder.RegisterService(service);
  // The sync server keeps at most MAX_POLLERS idle threads and makes a new one whenever all
  // are busy; at its default (2) a few clients plus their long-lived Watch streams made it
  // create and end a thread for nearly every call (thread creation and teardown were ~6% of
  // the local backend's CPU per tiny job; bench/README.md). Keeping a few more costs only
  // their stacks while idle.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 2);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 8);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen, " (address in use or invalid)"));
  }
  return std::unique_ptr<GrpcServer>(new GrpcServer(service, std::move(server), port, tls));
}

GrpcServer::~GrpcServer() { Shutdown(absl::Seconds(1)); }

void GrpcServer::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  service_->BeginShutdown();
  // A relative deadline (GPR_TIMESPAN): gRPC adds it to its own clock, none is read here.
  server_->Shutdown(gpr_time_from_millis(absl::ToInt64Milliseconds(grace), GPR_TIMESPAN));
  server_->Wait();
}

}  // namespace coach::server
