#include "operator/server/kube_api_auth.h"

#include <openssl/evp.h>

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "operator/backend/kube/client/resource.h"
#include "spdlog/spdlog.h"

namespace coach::server {
namespace {

using nlohmann::json;

kubeclient::ResourceDescriptor TokenReviews() {
  return {"authentication.k8s.io", "v1", "tokenreviews", "TokenReview", false, false};
}
kubeclient::ResourceDescriptor SubjectAccessReviews() {
  return {"authorization.k8s.io", "v1",  "subjectaccessreviews",
          "SubjectAccessReview",  false, false};
}

// A review that could not be made. The operator's own 401/403 means its RBAC or
// credentials are wrong, not the caller's: say so, and never allow.
absl::Status ReviewFailed(const char* what, const absl::Status& s) {
  if (absl::IsPermissionDenied(s) || absl::IsUnauthenticated(s)) {
    spdlog::error(
        "api auth: the operator may not create {}: {} (chart: auth.mode=kubernetes "
        "grants it)",
        what, std::string(s.message()));
    return absl::UnavailableError(
        absl::StrCat("the operator cannot check credentials: it may not create ", what));
  }
  return absl::UnavailableError(
      absl::StrCat("the operator cannot check credentials: ", what, ": ", s.message()));
}

std::vector<std::string> Strings(const json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const json& v : j) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

// The decision's cache key: everything the review is asked about. '\x1f' cannot occur in
// gRPC metadata-derived names or in Kubernetes names, so fields cannot run into each other.
std::string DecisionKey(const UserInfo& u, const ResourceAttributes& a) {
  std::string k = absl::StrJoin({u.username, u.uid, absl::StrJoin(u.groups, "\x1e"), a.verb,
                                 a.group, a.resource, a.subresource, a.namespace_, a.name},
                                "\x1f");
  for (const auto& [key, values] : u.extra) {
    absl::StrAppend(&k, "\x1f", key, "=", absl::StrJoin(values, "\x1e"));
  }
  return k;
}

}  // namespace

std::string TokenDigest(const std::string& token) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(token.data(), token.size(), digest, &length, EVP_sha256(), nullptr);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), length));
}

KubeApiAuth::KubeApiAuth(kubeclient::KubeClient* client, KubeApiAuthOptions options)
    : client_(client),
      options_(options),
      users_(options.clock, options.max_tokens),
      decisions_(options.clock, options.max_decisions) {}

absl::StatusOr<UserInfo> KubeApiAuth::Authenticate(const std::string* authorization_header) {
  absl::StatusOr<std::string> token = BearerToken(authorization_header);
  if (!token.ok()) return token.status();
  const std::string key = TokenDigest(*token);
  if (std::optional<UserInfo> cached = users_.Get(key)) return *std::move(cached);

  json review = {{"apiVersion", "authentication.k8s.io/v1"},
                 {"kind", "TokenReview"},
                 {"spec", {{"token", *token}}}};
  ++token_reviews_;
  absl::StatusOr<json> answer = client_->Create(TokenReviews(), "", review);
  if (!answer.ok()) {
    // 400/422: the API server could not read it as a token at all.
    if (absl::IsInvalidArgument(answer.status())) {
      return absl::UnauthenticatedError("the Kubernetes API server rejected the token");
    }
    return ReviewFailed("tokenreviews.authentication.k8s.io", answer.status());
  }
  const json& status = answer->value("status", json::object());
  if (!status.value("authenticated", false)) {
    // status.error is the authenticators' own words ("invalid bearer token", "token has
    // expired"); it does not echo the token.
    std::string why = status.value("error", "");
    spdlog::debug("api auth: token {}... rejected: {}", key.substr(0, 8), why);
    return absl::UnauthenticatedError(absl::StrCat(
        "the Kubernetes API server did not authenticate the token", why.empty() ? "" : ": ", why));
  }
  const json& u = status.value("user", json::object());
  UserInfo user;
  user.username = u.value("username", "");
  user.uid = u.value("uid", "");
  user.groups = Strings(u.value("groups", json::array()));
  if (u.contains("extra") && u["extra"].is_object()) {
    for (const auto& [k, v] : u["extra"].items()) user.extra[k] = Strings(v);
  }
  if (user.username.empty()) {
    return absl::UnauthenticatedError("the Kubernetes API server authenticated no user name");
  }
  users_.Put(key, user, options_.authenticated_ttl);
  return user;
}

absl::Status KubeApiAuth::Authorize(const UserInfo& user, const ResourceAttributes& attrs) {
  const std::string key = DecisionKey(user, attrs);
  std::optional<Decision> decision = decisions_.Get(key);
  if (!decision) {
    json resource = {{"verb", attrs.verb},
                     {"group", attrs.group},
                     {"resource", attrs.resource},
                     {"subresource", attrs.subresource},
                     {"namespace", attrs.namespace_},
                     {"name", attrs.name}};
    json spec = {
        {"user", user.username}, {"groups", user.groups}, {"resourceAttributes", resource}};
    if (!user.uid.empty()) spec["uid"] = user.uid;
    if (!user.extra.empty()) spec["extra"] = user.extra;
    json review = {
        {"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SubjectAccessReview"}, {"spec", spec}};
    ++access_reviews_;
    absl::StatusOr<json> answer = client_->Create(SubjectAccessReviews(), "", review);
    if (!answer.ok()) {
      return ReviewFailed("subjectaccessreviews.authorization.k8s.io", answer.status());
    }
    const json& status = answer->value("status", json::object());
    decision = Decision{status.value("allowed", false) && !status.value("denied", false),
                        status.value("reason", "")};
    decisions_.Put(key, *decision, decision->allowed ? options_.allowed_ttl : options_.denied_ttl);
  }
  if (decision->allowed) return absl::OkStatus();
  spdlog::info("api auth: {} may not {} {} in namespace \"{}\"", user.username, attrs.verb,
               attrs.GroupResource(), attrs.namespace_);
  return absl::PermissionDeniedError(ForbiddenMessage(user.username, attrs, decision->reason));
}

}  // namespace coach::server
