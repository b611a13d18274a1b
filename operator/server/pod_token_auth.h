#pragma once

// Who reports progress (ReportProgress, progress_intake.h): a replica pod, with its own
// projected ServiceAccount token of audience "coach" (kProgressAudience; the reconciler mounts
// one into replicas that report, operator/reconcile/progress_report_env.h). Whatever
// --api-auth says, such a token is checked with a TokenReview that names that audience:
//
//   POST /apis/authentication.k8s.io/v1/tokenreviews  {spec: {token, audiences: [coach]}}
//
// and it identifies a pod only when the answer is authenticated for "coach" (status.audiences)
// as system:serviceaccount:<namespace>:<name> with the pod the kubelet bound it to in
// user.extra (authentication.kubernetes.io/pod-name and pod-uid, which the API server sets on
// every pod-bound token). The operator's ServiceAccount needs `create` on tokenreviews (the
// chart grants it with progressReports.enabled).
//
// A "coach" token gives nothing else: the API server does not take it (wrong audience), and
// every other call refuses it outright (IsProgressToken). It does not stand for its
// ServiceAccount either: what the pod may report is decided per pod (AuthorizeProgressReport).
//
// Answers are remembered under the SHA-256 of the token: an identity until the token expires
// (its exp claim), at most `max_ttl`; a refusal for `denied_ttl`. A pod that goes away is
// refused by the backend, whatever is remembered (its cache must hold the pod with that UID).
// At most `max_reviews_in_flight` reviews run at once; a call beyond that is Unavailable at
// once, so that a crowd of pods (every replica reporting after an operator restart) cannot
// tie up the API's threads waiting on the API server.

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/backend/kube/client/kube_client.h"
#include "operator/server/progress_token.h"
#include "operator/server/ttl_cache.h"

namespace coach::server {

// The keys of user.extra that name the pod a ServiceAccount token is bound to.
inline constexpr char kExtraPodName[] = "authentication.kubernetes.io/pod-name";
inline constexpr char kExtraPodUid[] = "authentication.kubernetes.io/pod-uid";

struct PodIdentity {
  std::string namespace_;
  std::string service_account;
  std::string pod_name;
  std::string pod_uid;
};

struct PodTokenAuthOptions {
  absl::Duration max_ttl = absl::Minutes(10);
  absl::Duration denied_ttl = absl::Seconds(10);
  size_t max_tokens = 16384;
  int max_reviews_in_flight = 8;
  Clock* clock = Clock::Real();
};

class PodTokenAuth {
 public:
  // `client` is not owned and must outlive this.
  PodTokenAuth(kubeclient::KubeClient* client, PodTokenAuthOptions options = {});

  // The pod an `authorization: Bearer <token>` header (nullptr: absent) stands for.
  // Unauthenticated: no or a malformed header, or a token the API server does not authenticate
  // for audience "coach" (the message never contains the token). PermissionDenied: an
  // authenticated token that is not a pod's (no pod in user.extra, not a ServiceAccount).
  // Unavailable: the API server could not answer or refused the operator, or too many reviews
  // are in flight. Thread-safe.
  absl::StatusOr<PodIdentity> Authenticate(const std::string* authorization_header);

  // Reviews sent to the API server (not answered from memory).
  int64_t token_reviews() const { return token_reviews_.load(); }

 private:
  struct Answer {
    absl::Status refusal;  // OK: `who` holds
    PodIdentity who;
  };

  absl::StatusOr<PodIdentity> Review(const std::string& token, absl::Duration* ttl);

  kubeclient::KubeClient* const client_;
  const PodTokenAuthOptions options_;
  TtlCache<Answer> answers_;
  std::atomic<int> in_flight_{0};
  std::atomic<int64_t> token_reviews_{0};
};

}  // namespace coach::server
