#pragma once

// --api-auth=kubernetes: callers authenticate with their own Kubernetes bearer token (a
// ServiceAccount token, a kubeconfig user's token) and every call is authorized by the API
// server, as an aggregated API server does (k8s.io/apiserver's delegating authn/authz):
//
//   Authenticate  POST /apis/authentication.k8s.io/v1/tokenreviews
//   Authorize     POST /apis/authorization.k8s.io/v1/subjectaccessreviews
//
// The operator's own ServiceAccount needs `create` on both (the chart's auth-delegator
// ClusterRole). Answers are remembered briefly, like kube-apiserver's webhook caches:
// authenticated tokens under the SHA-256 of the token (never the token itself), allowed and
// denied decisions per (user, attributes). Rejected tokens are not remembered. A RoleBinding
// change therefore shows within the TTL (10 s by default).
//
// Errors as ApiAuth (api_auth.h). Unavailable when the API server cannot answer (down,
// 5xx, timeout) or refuses the operator itself (its RBAC lacks the review rights): a
// review that did not happen never allows.

#include <string>

#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/kube/client/kube_client.h"
#include "operator/server/api_auth.h"
#include "operator/server/ttl_cache.h"

namespace coach::server {

struct KubeApiAuthOptions {
  absl::Duration authenticated_ttl = absl::Seconds(10);
  absl::Duration allowed_ttl = absl::Seconds(10);
  absl::Duration denied_ttl = absl::Seconds(10);
  size_t max_tokens = 4096;
  size_t max_decisions = 16384;
  Clock* clock = Clock::Real();
};

// "aa32..." : the lowercase hex SHA-256 of `token`, the cache key of a token.
std::string TokenDigest(const std::string& token);

class KubeApiAuth final : public ApiAuth {
 public:
  // `client` is not owned and must outlive this.
  KubeApiAuth(kubeclient::KubeClient* client, KubeApiAuthOptions options = {});

  absl::StatusOr<UserInfo> Authenticate(const std::string* authorization_header) override;
  absl::Status Authorize(const UserInfo& user, const ResourceAttributes& attrs) override;
  bool Authorizes() const override { return true; }
  std::string Mode() const override { return "kubernetes"; }

  // Reviews sent to the API server (not answered from the caches), for tests and metrics.
  int64_t token_reviews() const { return token_reviews_.load(); }
  int64_t access_reviews() const { return access_reviews_.load(); }

 private:
  struct Decision {
    bool allowed = false;
    std::string reason;
  };

  kubeclient::KubeClient* const client_;
  const KubeApiAuthOptions options_;
  TtlCache<UserInfo> users_;
  TtlCache<Decision> decisions_;
  std::atomic<int64_t> token_reviews_{0};
  std::atomic<int64_t> access_reviews_{0};
};

}  // namespace coach::server
