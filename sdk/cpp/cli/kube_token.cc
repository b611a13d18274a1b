#include "sdk/cpp/cli/kube_token.h"

#include "absl/strings/str_cat.h"
#include "operator/backend/kube/client/kube_config.h"

namespace coach::cli {

absl::Status UseKubeconfigToken(const std::string& path, const std::string& context,
                                sdk::ConnectionOptions* connection) {
  if (!connection->token_file.empty()) {
    return absl::InvalidArgumentError("--kubeconfig: give either --kubeconfig or --token-file");
  }
  absl::StatusOr<kubeclient::KubeConfig> config = kubeclient::LoadKubeConfigFile(path, context);
  if (!config.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--kubeconfig: ", config.status().message()));
  }
  if (!config->token.empty()) {
    connection->token = config->token;
  } else if (!config->token_file.empty()) {
    connection->token_file = config->token_file;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--kubeconfig: ", config->source,
                     ": the user has no token or tokenFile (coach presents bearer tokens only; "
                     "use --token-file)"));
  }
  return absl::OkStatus();
}

}  // namespace coach::cli
