#include "operator/server/kube_api_auth.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "common/testing/fake_clock.h"
#include "operator/backend/kube/testing/fake_kube_client.h"

namespace coach::server {
namespace {

using nlohmann::json;

constexpr char kGoodToken[] = "tok-team-a-s3cret";

// Answers TokenReviews and SubjectAccessReviews as an API server with one user would:
// kGoodToken is system:serviceaccount:a:team-a, who may do anything to pytorchjobs in "a".
class ReviewingKubeClient : public kubeclient::testing::FakeKubeClient {
 public:
  absl::StatusOr<json> Create(const kubeclient::ResourceDescriptor& resource, const std::string& ns,
                              const json& object) override {
    reviews.push_back(object);
    if (!fail.ok()) return fail;
    json out = object;
    if (resource.plural == "tokenreviews") {
      EXPECT_EQ(resource.group, "authentication.k8s.io");
      EXPECT_FALSE(resource.namespaced);
      if (object["spec"]["token"] == kGoodToken) {
        out["status"] = {{"authenticated", true},
                         {"user",
                          {{"username", "system:serviceaccount:a:team-a"},
                           {"uid", "u-1"},
                           {"groups", {"system:serviceaccounts", "system:authenticated"}},
                           {"extra", {{"authentication.kubernetes.io/pod-name", {"p"}}}}}}};
      } else {
        out["status"] = {{"authenticated", false}, {"error", "invalid bearer token"}};
      }
      return out;
    }
    EXPECT_EQ(resource.plural, "subjectaccessreviews");
    EXPECT_EQ(resource.group, "authorization.k8s.io");
    const json& attrs = object["spec"]["resourceAttributes"];
    const bool allowed = object["spec"]["user"] == "system:serviceaccount:a:team-a" &&
                         attrs["namespace"] == "a" && attrs["resource"] == "pytorchjobs";
    out["status"] = {{"allowed", allowed}};
    if (!allowed) out["status"]["reason"] = "no RBAC rule";
    (void)ns;
    return out;
  }

  std::vector<json> reviews;
  absl::Status fail;
};

class KubeApiAuthTest : public ::testing::Test {
 protected:
  KubeApiAuthOptions Options() {
    KubeApiAuthOptions o;
    o.clock = &clock_;
    return o;
  }
  static std::string Bearer(const std::string& t) { return "Bearer " + t; }

  FakeClock clock_;
  ReviewingKubeClient client_;
};

TEST_F(KubeApiAuthTest, TokenDigestIsSha256) {
  EXPECT_EQ(TokenDigest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_F(KubeApiAuthTest, AuthenticatesWithATokenReviewAndRemembersBriefly) {
  KubeApiAuth auth(&client_, Options());
  const std::string header = Bearer(kGoodToken);
  absl::StatusOr<UserInfo> user = auth.Authenticate(&header);
  ASSERT_TRUE(user.ok()) << user.status();
  EXPECT_EQ(user->username, "system:serviceaccount:a:team-a");
  EXPECT_EQ(user->uid, "u-1");
  EXPECT_EQ(user->groups.size(), 2u);
  EXPECT_EQ(user->extra.at("authentication.kubernetes.io/pod-name").at(0), "p");
  ASSERT_EQ(client_.reviews.size(), 1u);
  EXPECT_EQ(client_.reviews[0]["kind"], "TokenReview");
  EXPECT_EQ(client_.reviews[0]["spec"]["token"], kGoodToken);

  ASSERT_TRUE(auth.Authenticate(&header).ok());
  EXPECT_EQ(auth.token_reviews(), 1);  // from the cache
  clock_.Advance(absl::Seconds(10));
  ASSERT_TRUE(auth.Authenticate(&header).ok());
  EXPECT_EQ(auth.token_reviews(), 2);  // expired: reviewed again
}

TEST_F(KubeApiAuthTest, RejectedMissingAndMalformedTokensAreUnauthenticated) {
  KubeApiAuth auth(&client_, Options());
  const std::string bad = Bearer("not-a-real-token");
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<UserInfo> user = auth.Authenticate(&bad);
    EXPECT_EQ(user.status().code(), absl::StatusCode::kUnauthenticated);
    EXPECT_FALSE(absl::StrContains(user.status().message(), "not-a-real-token"));
  }
  EXPECT_EQ(auth.token_reviews(), 2);  // a rejection is never remembered
  EXPECT_EQ(auth.Authenticate(nullptr).status().code(), absl::StatusCode::kUnauthenticated);
  const std::string basic = "Basic dTpw";
  EXPECT_EQ(auth.Authenticate(&basic).status().code(), absl::StatusCode::kUnauthenticated);
  const std::string empty = "Bearer ";
  EXPECT_EQ(auth.Authenticate(&empty).status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.token_reviews(), 2);  // none of those reached the API server
}

TEST_F(KubeApiAuthTest, ApiServerDownIsUnavailableNeverAllowed) {
  KubeApiAuth auth(&client_, Options());
  const std::string header = Bearer(kGoodToken);
  client_.fail = absl::UnavailableError("connection refused");
  absl::StatusOr<UserInfo> user = auth.Authenticate(&header);
  EXPECT_EQ(user.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(absl::StrContains(user.status().message(), kGoodToken));
  // The operator's own RBAC lacking the review rights: Unavailable too, not the caller's fault.
  client_.fail = absl::PermissionDeniedError("tokenreviews is forbidden");
  EXPECT_EQ(auth.Authenticate(&header).status().code(), absl::StatusCode::kUnavailable);

  client_.fail = absl::OkStatus();
  user = auth.Authenticate(&header);
  ASSERT_TRUE(user.ok());
  client_.fail = absl::UnavailableError("connection refused");
  EXPECT_EQ(auth.Authorize(*user, {"create", "kubeflow.org", "pytorchjobs", "", "a", "j"}).code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(KubeApiAuthTest, AuthorizesWithSubjectAccessReviews) {
  KubeApiAuth auth(&client_, Options());
  const std::string header = Bearer(kGoodToken);
  absl::StatusOr<UserInfo> user = auth.Authenticate(&header);
  ASSERT_TRUE(user.ok());
  const ResourceAttributes in_a{"create", "kubeflow.org", "pytorchjobs", "", "a", "j"};
  EXPECT_TRUE(auth.Authorize(*user, in_a).ok());
  const json& sar = client_.reviews.back();
  EXPECT_EQ(sar["kind"], "SubjectAccessReview");
  EXPECT_EQ(sar["spec"]["user"], "system:serviceaccount:a:team-a");
  EXPECT_EQ(sar["spec"]["uid"], "u-1");
  EXPECT_EQ(sar["spec"]["groups"].size(), 2u);
  EXPECT_EQ(sar["spec"]["extra"]["authentication.kubernetes.io/pod-name"][0], "p");
  EXPECT_EQ(sar["spec"]["resourceAttributes"], json({{"verb", "create"},
                                                     {"group", "kubeflow.org"},
                                                     {"resource", "pytorchjobs"},
                                                     {"subresource", ""},
                                                     {"namespace", "a"},
                                                     {"name", "j"}}));

  const ResourceAttributes in_b{"create", "kubeflow.org", "pytorchjobs", "", "b", "j"};
  absl::Status denied = auth.Authorize(*user, in_b);
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(denied.message(),
            "user \"system:serviceaccount:a:team-a\" cannot create resource \"pytorchjobs\" in "
            "API group \"kubeflow.org\" in the namespace \"b\": no RBAC rule");

  // Both decisions are remembered for the TTL, then asked again.
  EXPECT_EQ(auth.access_reviews(), 2);
  EXPECT_TRUE(auth.Authorize(*user, in_a).ok());
  EXPECT_EQ(auth.Authorize(*user, in_b).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(auth.access_reviews(), 2);
  clock_.Advance(absl::Seconds(10));
  EXPECT_TRUE(auth.Authorize(*user, in_a).ok());
  EXPECT_EQ(auth.access_reviews(), 3);

  // Another user never gets the first one's decision.
  UserInfo other = *user;
  other.username = "system:serviceaccount:b:team-b";
  EXPECT_EQ(auth.Authorize(other, in_a).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(auth.access_reviews(), 4);
}

}  // namespace
}  // namespace coach::server
