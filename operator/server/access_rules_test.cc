#include "operator/server/access_rules.h"

#include <gtest/gtest.h>

namespace coach::server {
namespace {

ResourceAttributes Attr(std::string verb, std::string group, std::string resource, std::string sub,
                        std::string ns, std::string name) {
  return {std::move(verb), std::move(group), std::move(resource),
          std::move(sub),  std::move(ns),    std::move(name)};
}

struct Case {
  ApiCall call;
  std::string ns;
  std::string name;
  std::vector<ResourceAttributes> want;
};

// What each call needs on a PyTorchJob: the rights kubectl would need for the same thing.
TEST(AccessRulesTest, EveryCall) {
  const std::string kf = "kubeflow.org";
  const std::vector<Case> cases = {
      {ApiCall::kCreateJob, "a", "j", {Attr("create", kf, "pytorchjobs", "", "a", "j")}},
      {ApiCall::kGetJob, "a", "j", {Attr("get", kf, "pytorchjobs", "", "a", "j")}},
      // Listing names no object; every namespace needs the cluster-scope right.
      {ApiCall::kListJobs, "a", "", {Attr("list", kf, "pytorchjobs", "", "a", "")}},
      {ApiCall::kListJobs, "", "", {Attr("list", kf, "pytorchjobs", "", "", "")}},
      {ApiCall::kWatchJobs, "a", "", {Attr("watch", kf, "pytorchjobs", "", "a", "")}},
      {ApiCall::kWatchJobs, "a", "j", {Attr("watch", kf, "pytorchjobs", "", "a", "j")}},
      {ApiCall::kWatchJobs, "", "", {Attr("watch", kf, "pytorchjobs", "", "", "")}},
      {ApiCall::kDeleteJob, "a", "j", {Attr("delete", kf, "pytorchjobs", "", "a", "j")}},
      {ApiCall::kSuspendJob, "a", "j", {Attr("patch", kf, "pytorchjobs", "", "a", "j")}},
      {ApiCall::kResumeJob, "a", "j", {Attr("patch", kf, "pytorchjobs", "", "a", "j")}},
      // The logs are the pods' logs.
      {ApiCall::kGetJobLogs,
       "a",
       "j",
       {Attr("get", kf, "pytorchjobs", "", "a", "j"), Attr("get", "", "pods", "log", "a", "")}},
      // describe shows the job's events.
      {ApiCall::kDescribeJob,
       "a",
       "j",
       {Attr("get", kf, "pytorchjobs", "", "a", "j"), Attr("list", "", "events", "", "a", "")}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(RequiredAccess(c.call, "pytorchjobs", c.ns, c.name), c.want)
        << ApiCallName(c.call) << " ns=" << c.ns << " name=" << c.name;
  }
}

TEST(AccessRulesTest, KindIsThePlural) {
  EXPECT_EQ(RequiredAccess(ApiCall::kCreateJob, "tfjobs", "b", "x")[0].resource, "tfjobs");
}

TEST(AccessRulesTest, ForbiddenMessageReadsLikeTheApiServers) {
  EXPECT_EQ(ForbiddenMessage("system:serviceaccount:a:team-a",
                             Attr("create", "kubeflow.org", "pytorchjobs", "", "b", "j")),
            "user \"system:serviceaccount:a:team-a\" cannot create resource \"pytorchjobs\" in "
            "API group \"kubeflow.org\" in the namespace \"b\"");
  EXPECT_EQ(ForbiddenMessage("u", Attr("list", "kubeflow.org", "tfjobs", "", "", ""), "no rule"),
            "user \"u\" cannot list resource \"tfjobs\" in API group \"kubeflow.org\" at the "
            "cluster scope: no rule");
  EXPECT_EQ(ForbiddenMessage("u", Attr("get", "", "pods", "log", "a", "")),
            "user \"u\" cannot get resource \"pods/log\" in API group \"\" in the namespace \"a\"");
}

}  // namespace
}  // namespace coach::server
