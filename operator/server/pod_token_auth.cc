#include "operator/server/pod_token_auth.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "operator/backend/kube/client/resource.h"
#include "operator/server/jwt_claims.h"
#include "operator/server/kube_api_auth.h"
#include "operator/server/token_auth.h"
#include "spdlog/spdlog.h"

namespace coach::server {
namespace {

using nlohmann::json;

constexpr char kServiceAccountPrefix[] = "system:serviceaccount:";

// The one value of user.extra[key], or "".
std::string OneExtra(const json& user, const char* key) {
  const json& extra = user.value("extra", json::object());
  if (!extra.is_object() || !extra.contains(key)) return "";
  std::vector<std::string> values = JsonStrings(extra[key]);
  return values.size() == 1 ? values[0] : "";
}

kubeclient::ResourceDescriptor TokenReviews() {
  return {"authentication.k8s.io", "v1", "tokenreviews", "TokenReview", false, false};
}

}  // namespace

PodTokenAuth::PodTokenAuth(kubeclient::KubeClient* client, PodTokenAuthOptions options)
    : client_(client), options_(options), answers_(options.clock, options.max_tokens) {}

absl::StatusOr<PodIdentity> PodTokenAuth::Authenticate(const std::string* authorization_header) {
  absl::StatusOr<std::string> token = BearerToken(authorization_header);
  if (!token.ok()) return token.status();
  const std::string key = TokenDigest(*token);
  if (std::optional<Answer> known = answers_.Get(key)) {
    if (!known->refusal.ok()) return known->refusal;
    return known->who;
  }
  // A slot, or Unavailable at once: waiting callers would each hold one of the API's threads.
  if (in_flight_.fetch_add(1) >= options_.max_reviews_in_flight) {
    in_flight_.fetch_sub(1);
    return absl::UnavailableError(
        "the operator is checking other pods' tokens; report again in a moment");
  }
  absl::Duration ttl = options_.denied_ttl;
  absl::StatusOr<PodIdentity> who = Review(*token, &ttl);
  in_flight_.fetch_sub(1);
  if (who.ok()) {
    answers_.Put(key, Answer{absl::OkStatus(), *who}, ttl);
  } else if (absl::IsUnauthenticated(who.status()) || absl::IsPermissionDenied(who.status())) {
    // A refusal is remembered briefly, so that a caller repeating a bad token costs no review.
    answers_.Put(key, Answer{who.status(), {}}, options_.denied_ttl);
  }
  return who;
}

absl::StatusOr<PodIdentity> PodTokenAuth::Review(const std::string& token, absl::Duration* ttl) {
  json review = {{"apiVersion", "authentication.k8s.io/v1"},
                 {"kind", "TokenReview"},
                 {"spec", {{"token", token}, {"audiences", {kProgressAudience}}}}};
  ++token_reviews_;
  absl::StatusOr<json> answer = client_->Create(TokenReviews(), "", review);
  if (!answer.ok()) {
    if (absl::IsInvalidArgument(answer.status())) {
      return absl::UnauthenticatedError("the Kubernetes API server rejected the token");
    }
    if (absl::IsPermissionDenied(answer.status()) || absl::IsUnauthenticated(answer.status())) {
      spdlog::error(
          "progress reports: the operator may not create tokenreviews.authentication.k8s.io: {} "
          "(chart: progressReports.enabled grants it)",
          std::string(answer.status().message()));
      return absl::UnavailableError(
          "the operator cannot check tokens: it may not create tokenreviews");
    }
    return absl::UnavailableError(
        absl::StrCat("the operator cannot check tokens: ", answer.status().message()));
  }
  const json& status = answer->value("status", json::object());
  if (!status.value("authenticated", false)) {
    std::string why = status.value("error", "");
    return absl::UnauthenticatedError(
        absl::StrCat("the Kubernetes API server did not authenticate the token for audience \"",
                     kProgressAudience, "\"", why.empty() ? "" : ": ", why));
  }
  // An answer that does not say the token is for "coach" may be for the API server's own
  // audience (an authenticator that ignores spec.audiences): not good enough.
  const std::vector<std::string> audiences = JsonStrings(status.value("audiences", json::array()));
  if (std::find(audiences.begin(), audiences.end(), kProgressAudience) == audiences.end()) {
    return absl::UnauthenticatedError(absl::StrCat(
        "the Kubernetes API server did not confirm audience \"", kProgressAudience, "\""));
  }
  const json& user = status.value("user", json::object());
  const std::string username = user.value("username", "");
  PodIdentity who;
  if (absl::StartsWith(username, kServiceAccountPrefix)) {
    std::vector<std::string> parts =
        absl::StrSplit(username.substr(sizeof(kServiceAccountPrefix) - 1), ':');
    if (parts.size() == 2) {
      who.namespace_ = parts[0];
      who.service_account = parts[1];
    }
  }
  who.pod_name = OneExtra(user, kExtraPodName);
  who.pod_uid = OneExtra(user, kExtraPodUid);
  if (who.namespace_.empty() || who.service_account.empty() || who.pod_name.empty() ||
      who.pod_uid.empty()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "user \"", username,
        "\" may not report progress: only a pod's own ServiceAccount token (projected, "
        "audience \"",
        kProgressAudience, "\") may"));
  }
  const json claims = JwtClaims(token);
  if (!claims.is_discarded() && claims.contains("exp") && claims["exp"].is_number()) {
    const absl::Time expires = absl::FromUnixSeconds(claims["exp"].get<int64_t>());
    *ttl = std::min(options_.max_ttl, expires - options_.clock->Now());
  } else {
    *ttl = options_.denied_ttl;
  }
  return who;
}

}  // namespace coach::server
