// The gRPC API's authentication and authorization for --api-auth (settings.h).

#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "operator/backend/kube/client/kube_client.h"
#include "operator/cmd/settings.h"
#include "operator/server/api_auth.h"

namespace coach::cmd {

// "kubernetes": TokenReview + SubjectAccessReview through `kube_client` (not owned; must
// outlive the result); "token"/"none": the shared token. FailedPrecondition: "kubernetes"
// without a client (never falls back to a weaker mode).
absl::StatusOr<std::unique_ptr<coach::server::ApiAuth>> MakeApiAuth(
    const Settings& settings, coach::kubeclient::KubeClient* kube_client, Clock* clock);

}  // namespace coach::cmd
