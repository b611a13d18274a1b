#include "operator/server/testing/token_reviewer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace coach::server::testing {

using nlohmann::json;

namespace {

std::string Base64Url(const std::string& s) {
  std::string out;
  absl::WebSafeBase64Escape(s, &out);
  return out;
}

}  // namespace

std::string MakeJwt(const std::string& claims_json) {
  return absl::StrCat(Base64Url(R"({"alg":"RS256","kid":"test"})"), ".", Base64Url(claims_json),
                      ".", Base64Url("not-a-signature"));
}

std::string TokenReviewer::Issue(const std::string& ns, const std::string& sa,
                                 const std::string& pod, const std::string& uid,
                                 std::vector<std::string> audiences, absl::Time expires) {
  std::lock_guard<std::mutex> lock(mu_);
  json claims = {{"aud", audiences},
                 {"exp", absl::ToUnixSeconds(expires)},
                 {"iss", "https://kubernetes.default.svc"},
                 {"sub", absl::StrCat("system:serviceaccount:", ns, ":", sa)},
                 {"jti", absl::StrCat("token-", ++serial_)}};
  if (!pod.empty()) claims["kubernetes.io"] = {{"pod", {{"name", pod}, {"uid", uid}}}};
  const std::string token = MakeJwt(claims.dump());
  tokens_[token] = Issued{ns, sa, pod, uid, std::move(audiences), expires};
  return token;
}

void TokenReviewer::Revoke(const std::string& token) {
  std::lock_guard<std::mutex> lock(mu_);
  tokens_.erase(token);
}

void TokenReviewer::SetReviewHook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  hook_ = std::move(hook);
}

void TokenReviewer::FailNextReview(absl::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_ = std::move(status);
}

std::vector<json> TokenReviewer::review_bodies() {
  std::lock_guard<std::mutex> lock(mu_);
  return bodies_;
}

absl::StatusOr<json> TokenReviewer::Create(const kubeclient::ResourceDescriptor& resource,
                                           const std::string& ns, const json& object) {
  if (resource.plural != "tokenreviews") return FakeKubeClient::Create(resource, ns, object);
  ++reviews_;
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hook = hook_;
  }
  if (hook) hook();
  std::lock_guard<std::mutex> lock(mu_);
  bodies_.push_back(object);
  if (!fail_next_.ok()) return std::exchange(fail_next_, absl::OkStatus());
  json out = object;
  const json& spec = object.value("spec", json::object());
  std::vector<std::string> wanted = spec.value("audiences", std::vector<std::string>{});
  if (wanted.empty()) wanted = {kApiAudience};
  auto it = tokens_.find(spec.value("token", ""));
  if (it == tokens_.end()) {
    out["status"] = {{"authenticated", false}, {"error", "invalid bearer token"}};
    return out;
  }
  const Issued& t = it->second;
  std::vector<std::string> both;
  for (const std::string& a : wanted) {
    if (std::find(t.audiences.begin(), t.audiences.end(), a) != t.audiences.end()) {
      both.push_back(a);
    }
  }
  if (both.empty()) {
    out["status"] = {{"authenticated", false},
                     {"error", "token audiences [...] is invalid for the target audiences"}};
    return out;
  }
  json user = {{"username", absl::StrCat("system:serviceaccount:", t.ns, ":", t.sa)},
               {"uid", absl::StrCat("sa-uid-", t.sa)},
               {"groups",
                {"system:serviceaccounts", absl::StrCat("system:serviceaccounts:", t.ns),
                 "system:authenticated"}}};
  if (!t.pod.empty()) {
    user["extra"] = {{"authentication.kubernetes.io/pod-name", {t.pod}},
                     {"authentication.kubernetes.io/pod-uid", {t.uid}}};
  }
  out["status"] = {{"authenticated", true}, {"audiences", both}, {"user", user}};
  return out;
}

}  // namespace coach::server::testing
