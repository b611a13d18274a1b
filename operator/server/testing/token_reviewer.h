#pragma once

// TokenReviewer: a FakeKubeClient that answers TokenReviews as kube-apiserver does for the
// tokens it issued: JWTs (claims readable, signature not) with audiences, optionally bound to a
// pod (user.extra pod-name and pod-uid). A review without spec.audiences is for the API
// server's own audience (kApiAudience). Everything else is FakeKubeClient's.

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "operator/backend/kube/testing/fake_kube_client.h"

namespace coach::server::testing {

inline constexpr char kApiAudience[] = "https://kubernetes.default.svc";

// "header.claims.signature" with `claims` (a JSON object's text) base64url-encoded.
std::string MakeJwt(const std::string& claims_json);

class TokenReviewer : public kubeclient::testing::FakeKubeClient {
 public:
  // A token of ServiceAccount `sa` in `ns` for `audiences`, bound to pod `pod` (`uid`) unless
  // `pod` is empty, expiring at `expires`.
  std::string Issue(const std::string& ns, const std::string& sa, const std::string& pod,
                    const std::string& uid, std::vector<std::string> audiences, absl::Time expires);
  // Review answers no longer authenticate `token` (as for a deleted pod or account).
  void Revoke(const std::string& token);
  // Called at the start of each review (e.g. to hold it).
  void SetReviewHook(std::function<void()> hook);
  // The next review fails with `status` (as the client would map the API server's answer).
  void FailNextReview(absl::Status status);

  int reviews() const { return reviews_.load(); }
  // The TokenReviews sent, oldest first.
  std::vector<nlohmann::json> review_bodies();

  absl::StatusOr<nlohmann::json> Create(const kubeclient::ResourceDescriptor& resource,
                                        const std::string& ns,
                                        const nlohmann::json& object) override;

 private:
  struct Issued {
    std::string ns, sa, pod, uid;
    std::vector<std::string> audiences;
    absl::Time expires;
  };
  std::mutex mu_;
  std::map<std::string, Issued> tokens_;
  std::function<void()> hook_;
  absl::Status fail_next_;
  std::vector<nlohmann::json> bodies_;
  std::atomic<int> reviews_{0};
  int serial_ = 0;
};

}  // namespace coach::server::testing
