#include "operator/cmd/api_server.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "operator/backend/progress_receiver.h"
#include "operator/cmd/api_auth_wiring.h"

namespace coach::cmd {

absl::Status ApiServer::Start(const Settings& settings, core::JobService* jobs,
                              backend::Backend* backend, kubeclient::KubeClient* kube_client,
                              Clock* clock) {
  auto api_auth = MakeApiAuth(settings, kube_client, clock);
  if (!api_auth.ok()) return api_auth.status();
  auth_mode_ = (*api_auth)->Mode();
  AcceptProgressReports(settings, backend, kube_client, clock);
  service_ = std::make_unique<server::TrainingServiceImpl>(jobs, *std::move(api_auth));
  if (progress_intake_ != nullptr) {
    service_->SetProgressIntake(progress_intake_.get());
    spdlog::info("coach-operator: replicas report progress to {}{}",
                 settings.config.progress_report_address,
                 settings.config.progress_report_ca_pem.empty() ? "" : " (TLS)");
  }
  auto grpc = server::GrpcServer::Start(service_.get(), settings.grpc_options);
  if (!grpc.ok()) {
    return absl::Status(grpc.status().code(), absl::StrCat("--listen: ", grpc.status().ToString()));
  }
  grpc_ = *std::move(grpc);
  return absl::OkStatus();
}

void ApiServer::AcceptProgressReports(const Settings& settings, backend::Backend* backend,
                                      kubeclient::KubeClient* kube_client, Clock* clock) {
  auto* receiver = dynamic_cast<backend::ProgressReceiver*>(backend);
  if (settings.config.progress_report_address.empty() || receiver == nullptr ||
      kube_client == nullptr) {
    return;
  }
  server::PodTokenAuthOptions pod_token_options;
  pod_token_options.clock = clock;
  pod_tokens_ = std::make_unique<server::PodTokenAuth>(kube_client, pod_token_options);
  server::CheckpointBookOptions book_options;
  book_options.clock = clock;
  checkpoints_ = std::make_unique<server::CheckpointBook>(book_options);
  progress_intake_ =
      std::make_unique<server::ProgressIntake>(pod_tokens_.get(), receiver, checkpoints_.get());
}

}  // namespace coach::cmd
