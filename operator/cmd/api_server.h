// coach-operator's gRPC API on --listen: the service over the job service, its authentication
// (--api-auth, api_auth_wiring.h) and, with --progress-report-address, the replicas' own
// progress reports.

#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/backend.h"
#include "operator/backend/kube/client/kube_client.h"
#include "operator/cmd/settings.h"
#include "operator/core/job_service.h"
#include "operator/server/grpc_server.h"
#include "operator/server/pod_token_auth.h"
#include "operator/server/progress_intake.h"
#include "operator/server/training_service_impl.h"

namespace coach::cmd {

// Members are destroyed in reverse order: the server before the service it calls.
class ApiServer {
 public:
  ApiServer() = default;
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Serves `jobs`. `backend` takes the progress reports when it can; `kube_client` (null but
  // with --backend=kube) reviews tokens. Everything must outlive the server. Call once. The
  // error's message is the line to log.
  absl::Status Start(const Settings& settings, core::JobService* jobs, backend::Backend* backend,
                     kubeclient::KubeClient* kube_client, Clock* clock);

  // After a successful Start only.
  bool tls() const { return grpc_->tls(); }
  const std::string& auth_mode() const { return auth_mode_; }
  // Where checkpoint requests reach the replicas through their progress reports; null when
  // they do not report (no --progress-report-address, or not the kube backend).
  backend::CheckpointChannel* checkpoints() { return checkpoints_.get(); }
  // Stops accepting calls and ends the streams, waiting up to `grace` for those in flight.
  void Shutdown(absl::Duration grace) { grpc_->Shutdown(grace); }

 private:
  // Replicas' own progress reports (--progress-report-address): each pod's token, reviewed for
  // audience "coach", lets it report for itself to the kube backend, whatever --api-auth is.
  void AcceptProgressReports(const Settings& settings, backend::Backend* backend,
                             kubeclient::KubeClient* kube_client, Clock* clock);

  std::string auth_mode_;
  std::unique_ptr<server::PodTokenAuth> pod_tokens_;
  std::unique_ptr<server::CheckpointBook> checkpoints_;
  std::unique_ptr<server::ProgressIntake> progress_intake_;
  std::unique_ptr<server::TrainingServiceImpl> service_;
  std::unique_ptr<server::GrpcServer> grpc_;
};

}  // namespace coach::cmd
