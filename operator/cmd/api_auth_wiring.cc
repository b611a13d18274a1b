#include "operator/cmd/api_auth_wiring.h"

#include "operator/server/kube_api_auth.h"
#include "operator/server/token_auth.h"

namespace coach::cmd {

absl::StatusOr<std::unique_ptr<coach::server::ApiAuth>> MakeApiAuth(
    const Settings& settings, coach::kubeclient::KubeClient* kube_client, Clock* clock) {
  if (settings.api_auth == "kubernetes") {
    if (kube_client == nullptr) {
      return absl::FailedPreconditionError("--api-auth=kubernetes: no Kubernetes API client");
    }
    coach::server::KubeApiAuthOptions options;
    options.clock = clock;
    return std::unique_ptr<coach::server::ApiAuth>(
        std::make_unique<coach::server::KubeApiAuth>(kube_client, options));
  }
  return std::unique_ptr<coach::server::ApiAuth>(std::make_unique<coach::server::SharedTokenAuth>(
      coach::server::TokenAuth(settings.api_auth == "token" ? settings.token : "")));
}

}  // namespace coach::cmd
