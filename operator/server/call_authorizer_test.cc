#include "operator/server/call_authorizer.h"

#include <gtest/gtest.h>

#include <set>

#include "absl/strings/str_cat.h"
#include "operator/core/testing/core_fixture.h"

namespace coach::server {
namespace {

using core::testing::CoreEnv;
using core::testing::PyTorchManifest;

UserInfo User(const std::string& name) {
  UserInfo u;
  u.username = name;
  return u;
}

// Allows exactly the "verb resource namespace" triples in `rules` (namespace "*": any,
// including the cluster scope); records what it was asked.
class RuleAuth : public ApiAuth {
 public:
  explicit RuleAuth(std::set<std::string> rules, bool authorizes = true)
      : rules_(std::move(rules)), authorizes_(authorizes) {}
  absl::StatusOr<UserInfo> Authenticate(const std::string*) override { return User("u"); }
  absl::Status Authorize(const UserInfo& user, const ResourceAttributes& a) override {
    asked.push_back(a);
    if (!down.ok()) return down;
    const std::string r = a.subresource.empty() ? a.resource : a.resource + "/" + a.subresource;
    if (rules_.count(absl::StrCat(a.verb, " ", r, " ", a.namespace_)) ||
        rules_.count(absl::StrCat(a.verb, " ", r, " *"))) {
      return absl::OkStatus();
    }
    return absl::PermissionDeniedError(ForbiddenMessage(user.username, a));
  }
  bool Authorizes() const override { return authorizes_; }
  std::string Mode() const override { return "rules"; }

  std::vector<ResourceAttributes> asked;
  absl::Status down;

 private:
  std::set<std::string> rules_;
  bool authorizes_;
};

class CallAuthorizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* ns : {"a", "b"}) {
      core::CreateRequest create;
      create.manifest = PyTorchManifest(absl::StrCat("job-", ns));
      create.namespace_ = ns;
      ASSERT_TRUE(env_.service->Create(create).ok());
    }
  }
  api::v1::TrainingJob Admitted(const std::string& ns) {
    core::CreateRequest create;
    create.manifest = PyTorchManifest("new");
    create.namespace_ = ns;
    return *env_.service->Admission(create);
  }

  CoreEnv env_;
  // team-a: everything on pytorchjobs in "a", pods' logs and events there; nothing else.
  RuleAuth team_a_{{"create pytorchjobs a", "get pytorchjobs a", "list pytorchjobs a",
                    "watch pytorchjobs a", "delete pytorchjobs a", "patch pytorchjobs a",
                    "get pods/log a", "list events a"}};
  UserInfo user_ = User("system:serviceaccount:a:team-a");
};

TEST_F(CallAuthorizerTest, CreateIsTheAdmittedJobsKindAndNamespace) {
  CallAuthorizer calls(&team_a_, env_.service.get());
  EXPECT_TRUE(calls.ForNewJob(user_, Admitted("a")).ok());
  absl::Status denied = calls.ForNewJob(user_, Admitted("b"));
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(denied.message(),
            "user \"system:serviceaccount:a:team-a\" cannot create resource \"pytorchjobs\" in "
            "API group \"kubeflow.org\" in the namespace \"b\"");
}

TEST_F(CallAuthorizerTest, NamedJobCallsAskAboutTheJobsKind) {
  CallAuthorizer calls(&team_a_, env_.service.get());
  for (ApiCall call : {ApiCall::kGetJob, ApiCall::kDeleteJob, ApiCall::kSuspendJob,
                       ApiCall::kResumeJob, ApiCall::kDescribeJob, ApiCall::kGetJobLogs}) {
    EXPECT_TRUE(calls.ForJob(user_, call, "a", "job-a").ok()) << ApiCallName(call);
    EXPECT_EQ(calls.ForJob(user_, call, "b", "job-b").code(), absl::StatusCode::kPermissionDenied)
        << ApiCallName(call);
  }
  EXPECT_EQ(team_a_.asked.back().resource, "pytorchjobs");
}

TEST_F(CallAuthorizerTest, AMissingJobIsNotFoundOnlyForWhoeverMayLook) {
  CallAuthorizer calls(&team_a_, env_.service.get());
  EXPECT_EQ(calls.ForJob(user_, ApiCall::kGetJob, "a", "nope").code(), absl::StatusCode::kNotFound);
  absl::Status b = calls.ForJob(user_, ApiCall::kGetJob, "b", "nope");
  EXPECT_EQ(b.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(std::string(b.message()).find("\"pytorchjobs\""), std::string::npos) << b;
  // Even when a job of that name exists there, team-a learns nothing more.
  EXPECT_EQ(calls.ForJob(user_, ApiCall::kGetJob, "b", "job-b").message(), b.message());
  EXPECT_EQ(calls.ForJob(user_, ApiCall::kGetJob, "a", "").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CallAuthorizerTest, ListAndWatchGetTheKindsTheCallerMaySee) {
  CallAuthorizer calls(&team_a_, env_.service.get());
  absl::StatusOr<KindFilter> in_a = calls.ForCollection(user_, ApiCall::kListJobs, "a");
  ASSERT_TRUE(in_a.ok()) << in_a.status();
  EXPECT_FALSE(in_a->all());
  api::v1::TrainingJob job;
  job.set_kind(api::v1::PYTORCH_JOB);
  EXPECT_TRUE(in_a->Allows(job));
  job.set_kind(api::v1::TF_JOB);
  EXPECT_FALSE(in_a->Allows(job));
  EXPECT_TRUE(calls.ForCollection(user_, ApiCall::kWatchJobs, "a", "job-a").ok());
  // Every namespace needs the cluster-scope right, which team-a lacks.
  absl::StatusOr<KindFilter> all_ns = calls.ForCollection(user_, ApiCall::kListJobs, "");
  EXPECT_EQ(all_ns.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(std::string(all_ns.status().message()).find("at the cluster scope"), std::string::npos);
  EXPECT_EQ(calls.ForCollection(user_, ApiCall::kWatchJobs, "b").status().code(),
            absl::StatusCode::kPermissionDenied);

  RuleAuth admin({"list pytorchjobs *", "list tfjobs *", "list mpijobs *", "list xgboostjobs *",
                  "list paddlejobs *", "list jaxjobs *", "list trainjobs *"});
  CallAuthorizer admin_calls(&admin, env_.service.get());
  absl::StatusOr<KindFilter> everything = admin_calls.ForCollection(user_, ApiCall::kListJobs, "");
  ASSERT_TRUE(everything.ok()) << everything.status();
  EXPECT_TRUE(everything->all());
}

TEST_F(CallAuthorizerTest, AnAuthorityThatCannotAnswerIsNeverAllow) {
  CallAuthorizer calls(&team_a_, env_.service.get());
  team_a_.down = absl::UnavailableError("API server down");
  EXPECT_EQ(calls.ForNewJob(user_, Admitted("a")).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(calls.ForJob(user_, ApiCall::kGetJob, "a", "job-a").code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(calls.ForJob(user_, ApiCall::kGetJob, "a", "nope").code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(calls.ForCollection(user_, ApiCall::kListJobs, "a").status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(CallAuthorizerTest, TokenModeAsksNothing) {
  RuleAuth token({}, /*authorizes=*/false);
  CallAuthorizer calls(&token, env_.service.get());
  EXPECT_TRUE(calls.ForNewJob(user_, Admitted("b")).ok());
  EXPECT_TRUE(calls.ForJob(user_, ApiCall::kDeleteJob, "b", "job-b").ok());
  absl::StatusOr<KindFilter> all = calls.ForCollection(user_, ApiCall::kListJobs, "");
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->all());
  EXPECT_TRUE(token.asked.empty());
}

}  // namespace
}  // namespace coach::server
