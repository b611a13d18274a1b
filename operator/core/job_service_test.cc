// JobService against the real SqliteJobStore and a FakeBackend (no controller running,
// except where noted).

#include "operator/core/job_service.h"

#include <gtest/gtest.h>

#include "operator/core/testing/core_fixture.h"

namespace coach::core {
namespace {

using testing::CoreEnv;
using testing::PyTorchManifest;

size_t StoredJobs(CoreEnv& env) {
  auto list = env.store->List({});
  return list.ok() ? list->jobs.size() : 0;
}

TEST(JobServiceTest, CreateStoresDefaultedJobAndCounts) {
  CoreEnv env;
  auto job = env.Create(PyTorchManifest("mnist"));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->metadata().namespace_(), "default");
  EXPECT_FALSE(job->metadata().uid().empty());
  EXPECT_EQ(job->spec().replica_specs().at("Master").replicas(), 1);
  EXPECT_EQ(env.backend.admitted(), std::vector<std::string>{"default/mnist"});
  EXPECT_EQ(env.metrics.jobs_created->Value({"default", "pytorch"}), 1);
  auto again = env.Create(PyTorchManifest("mnist"));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
}

TEST(JobServiceTest, NamespaceFromRequestWhenJobHasNone) {
  CoreEnv env;
  CreateRequest request;
  request.manifest = PyTorchManifest("a");
  request.namespace_ = "team-a";
  auto job = env.service->Create(request);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->metadata().namespace_(), "team-a");
  EXPECT_TRUE(env.service->Get("team-a", "a").ok());
}

TEST(JobServiceTest, CreateFromProtoIgnoresClientStatus) {
  CoreEnv env;
  CreateRequest parse;
  parse.manifest = PyTorchManifest("p");
  parse.dry_run = true;
  auto proto = env.service->Create(parse);
  ASSERT_TRUE(proto.ok());
  CreateRequest request;
  request.job = *proto;
  request.job->mutable_status()->add_conditions()->set_type("Succeeded");
  auto job = env.service->Create(request);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->status().conditions_size(), 0);
}

TEST(JobServiceTest, DryRunDefaultsAndStoresNothing) {
  CoreEnv env;
  CreateRequest request;
  request.manifest = PyTorchManifest("dry");
  request.dry_run = true;
  auto job = env.service->Create(request);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(job->metadata().uid().empty());
  EXPECT_EQ(job->spec().replica_specs().at("Worker").restart_policy(), "OnFailure");
  EXPECT_EQ(StoredJobs(env), 0u);
  EXPECT_TRUE(env.backend.admitted().empty());
}

TEST(JobServiceTest, InvalidManifestNamesEveryFieldAndStoresNothing) {
  CoreEnv env;
  const std::string manifest =
      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: Bad_Name\nspec:\n"
      "  runPolicy:\n    backoffLimit: -1\n  pytorchReplicaSpecs:\n    Worker:\n      replicas: "
      "-2\n"
      "      template:\n        spec:\n          containers:\n          - name: pytorch\n";
  auto job = env.Create(manifest);
  ASSERT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument) << job.status();
  const std::string msg(job.status().message());
  EXPECT_NE(msg.find("metadata.name"), std::string::npos) << msg;
  EXPECT_NE(msg.find("spec.runPolicy.backoffLimit"), std::string::npos) << msg;
  EXPECT_NE(msg.find("spec.pytorchReplicaSpecs.Worker.replicas"), std::string::npos) << msg;
  EXPECT_NE(msg.find("image"), std::string::npos) << msg;
  EXPECT_EQ(StoredJobs(env), 0u);
  EXPECT_EQ(env.metrics.admission_rejected->Value({"invalid"}), 1);

  auto garbage = env.Create("kind: [unclosed");
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kInvalidArgument);
  auto empty = env.service->Create(CreateRequest{});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StoredJobs(env), 0u);
}

TEST(JobServiceTest, LauncherAnnotationNeedsACommand) {
  CoreEnv env;
  const std::string manifest =
      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: wrapped\n"
      "  annotations:\n    coach.dev/launcher: \"true\"\nspec:\n  pytorchReplicaSpecs:\n"
      "    Worker:\n      replicas: 1\n      template:\n        spec:\n          containers:\n"
      "          - name: sidecar\n            image: s\n            command: [side]\n"
      "          - name: pytorch\n            image: busybox\n";
  auto job = env.Create(manifest);
  ASSERT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument) << job.status();
  const std::string msg(job.status().message());
  EXPECT_NE(msg.find("spec.pytorchReplicaSpecs.Worker.template.spec.containers[1].command"),
            std::string::npos)
      << msg;
  EXPECT_EQ(StoredJobs(env), 0u);
}

TEST(JobServiceTest, AdmissionFailureLeavesNothing) {
  CoreEnv env;
  env.backend.SetAdmitError(absl::ResourceExhaustedError("needs 64 GPUs, host has 8"));
  auto job = env.Create(PyTorchManifest("huge"));
  ASSERT_EQ(job.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(job.status().message()).find("64 GPUs"), std::string::npos);
  EXPECT_EQ(StoredJobs(env), 0u);
  EXPECT_EQ(env.service->Get("default", "huge").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env.metrics.jobs_created->Value({"default", "pytorch"}), 0);
  EXPECT_EQ(env.metrics.admission_rejected->Value({"resource_exhausted"}), 1);
  // The name is free again.
  env.backend.SetAdmitError(absl::OkStatus());
  EXPECT_TRUE(env.Create(PyTorchManifest("huge")).ok());
}

TEST(JobServiceTest, ListWithSelectorsAndPaging) {
  CoreEnv env;
  ASSERT_TRUE(
      env.Create(PyTorchManifest("a", 1, "OnFailure", "", "    team: nlp\n    tier: dev\n")).ok());
  ASSERT_TRUE(env.Create(PyTorchManifest("b", 1, "OnFailure", "", "    team: nlp\n")).ok());
  ASSERT_TRUE(env.Create(PyTorchManifest("c", 1, "OnFailure", "", "    team: cv\n")).ok());
  auto names = [&](const std::string& selector) {
    ListRequest r;
    r.label_selector = selector;
    auto list = env.service->List(r);
    EXPECT_TRUE(list.ok()) << list.status();
    std::string out;
    for (const auto& j : list->jobs) out += j.metadata().name();
    return out;
  };
  EXPECT_EQ(names(""), "abc");
  EXPECT_EQ(names("team=nlp"), "ab");
  EXPECT_EQ(names("team==nlp,tier!=dev"), "b");
  EXPECT_EQ(names("tier"), "a");
  EXPECT_EQ(names("!tier"), "bc");
  EXPECT_EQ(names("team!=nlp"), "c");

  ListRequest bad;
  bad.label_selector = "team in (nlp)";
  EXPECT_EQ(env.service->List(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad.label_selector = "";
  bad.page_size = -1;
  EXPECT_EQ(env.service->List(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad.page_size = 0;
  bad.page_token = "garbage!";
  EXPECT_EQ(env.service->List(bad).status().code(), absl::StatusCode::kInvalidArgument);

  ListRequest page;
  page.page_size = 2;
  auto first = env.service->List(page);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->jobs.size(), 2u);
  ASSERT_FALSE(first->next_page_token.empty());
  page.page_token = first->next_page_token;
  auto second = env.service->List(page);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->jobs.size(), 1u);
  EXPECT_EQ(second->jobs[0].metadata().name(), "c");
  EXPECT_TRUE(second->next_page_token.empty());
  page.page_size = 5000;  // clamped to the max
  page.page_token = "";
  EXPECT_EQ(env.service->List(page)->jobs.size(), 3u);
}

TEST(JobServiceTest, DeleteForgetsThenDeletes) {
  CoreEnv env;
  ASSERT_TRUE(env.Create(PyTorchManifest("d")).ok());
  ASSERT_TRUE(env.service->Delete("default", "d").ok());
  EXPECT_EQ(env.backend.forgotten(), std::vector<std::string>{"default/d"});
  EXPECT_EQ(env.service->Get("default", "d").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env.service->Delete("default", "d").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(env.metrics.jobs_deleted->Value({"default", "pytorch"}), 1);
}

// The deleted hook (the controller's, which takes the job off its gauges) gets the job as it was
// last stored, once, and only when the store deleted it.
TEST(JobServiceTest, DeleteTellsTheDeletedHookTheJobAsStored) {
  CoreEnv env;
  std::vector<api::v1::TrainingJob> deleted;
  env.service->SetDeleted([&](const api::v1::TrainingJob& job) { deleted.push_back(job); });
  auto created = env.Create(PyTorchManifest("h"));
  ASSERT_TRUE(created.ok());
  ASSERT_TRUE(env.service->Delete("default", "h").ok());
  ASSERT_EQ(deleted.size(), 1u);
  EXPECT_EQ(deleted[0].metadata().uid(), created->metadata().uid());
  EXPECT_EQ(deleted[0].metadata().resource_version(), created->metadata().resource_version());
  EXPECT_EQ(env.service->Delete("default", "h").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(deleted.size(), 1u);
  env.service->SetDeleted(nullptr);
}

TEST(JobServiceTest, SuspendResumeAndFinishedJobs) {
  CoreEnv env;
  ASSERT_TRUE(env.Create(PyTorchManifest("s")).ok());
  auto suspended = env.service->Suspend("default", "s");
  ASSERT_TRUE(suspended.ok()) << suspended.status();
  EXPECT_TRUE(suspended->spec().run_policy().suspend());
  // Idempotent.
  EXPECT_EQ(env.service->Suspend("default", "s")->metadata().resource_version(),
            suspended->metadata().resource_version());
  auto resumed = env.service->Resume("default", "s");
  ASSERT_TRUE(resumed.ok());
  EXPECT_FALSE(resumed->spec().run_policy().suspend());
  EXPECT_EQ(env.service->Suspend("default", "nope").status().code(), absl::StatusCode::kNotFound);

  auto job = env.store->Get({"default", "s"});
  auto* cond = job->mutable_status()->add_conditions();
  cond->set_type("Succeeded");
  cond->set_status("True");
  ASSERT_TRUE(env.store->UpdateStatus(*job).ok());
  EXPECT_EQ(env.service->Suspend("default", "s").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(env.service->Resume("default", "s").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(JobServiceTest, DescribeAndLogs) {
  CoreEnv env;
  env.StartController(1);
  ASSERT_TRUE(env.Create(PyTorchManifest("desc")).ok());
  ASSERT_TRUE(
      CoreEnv::WaitFor([&] { return env.backend.PodNames("default", "desc").size() == 2; }));
  env.backend.SetPodPhase("default", "desc", "desc-worker-0", model::PodPhase::kFailed, 3);
  ASSERT_TRUE(CoreEnv::WaitFor([&] {
    auto d = env.service->Describe("default", "desc");
    return d.ok() && !d->events.empty();
  }));
  auto d = env.service->Describe("default", "desc");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->job.metadata().name(), "desc");
  EXPECT_FALSE(d->events.empty());
  EXPECT_EQ(env.service->Describe("default", "none").status().code(), absl::StatusCode::kNotFound);

  env.backend.SetLog("desc-master-0", "hello\n");
  std::string got;
  std::atomic<bool> cancelled{false};
  backend::LogOptions options;
  options.replica = "desc-master-0";
  ASSERT_TRUE(env.service
                  ->Logs(
                      "default", "desc", options,
                      [&](const std::string& r, const std::string& data) {
                        got += r + ":" + data;
                        return true;
                      },
                      cancelled)
                  .ok());
  EXPECT_EQ(got, "desc-master-0:hello\n");
  EXPECT_EQ(env.service->Logs("default", "none", options, nullptr, cancelled).code(),
            absl::StatusCode::kNotFound);
}

TEST(JobServiceTest, DescribeListsReplicas) {
  CoreEnv env;
  ASSERT_TRUE(env.Create(PyTorchManifest("r")).ok());
  env.backend.SetPodPhase("default", "r", "r-master-0", model::PodPhase::kFailed, 137, false);
  auto d = env.service->Describe("default", "r");
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->replicas.size(), 1u);
  EXPECT_EQ(d->replicas[0].phase, "Failed");
  EXPECT_EQ(d->replicas[0].exit_code, 137);
}

TEST(JobServiceTest, WatchGetsAddedModifiedDeleted) {
  CoreEnv env;
  ASSERT_TRUE(env.Create(PyTorchManifest("before")).ok());
  auto sub = env.service->Watch("default", "", "");
  ASSERT_TRUE(sub.ok()) << sub.status();
  auto next = [&]() -> std::optional<WatchEvent> {
    auto ev = (*sub)->Next(absl::Seconds(5));
    if (!ev.ok()) return std::nullopt;
    return *ev;
  };
  auto ev = next();
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->type, WatchEventType::kAdded);
  EXPECT_EQ(ev->job.metadata().name(), "before");
  ASSERT_TRUE(env.Create(PyTorchManifest("w")).ok());
  ev = next();
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->type, WatchEventType::kAdded);
  EXPECT_EQ(ev->job.metadata().name(), "w");
  ASSERT_TRUE(env.service->Suspend("default", "w").ok());
  ev = next();
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->type, WatchEventType::kModified);
  ASSERT_TRUE(env.service->Delete("default", "w").ok());
  ev = next();
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->type, WatchEventType::kDeleted);
  EXPECT_EQ(ev->job.metadata().name(), "w");
  EXPECT_EQ(env.service->Watch("", "", "a b").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coach::core
