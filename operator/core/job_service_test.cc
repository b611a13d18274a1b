// JobService against the real SqliteJobStore and a FakeBackend (no controller running,
// except where noted).

#include "operator/core/job_service.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1/codec/job_codec.h"
#include "operator/core/testing/core_fixture.h"

namespace coach::core {
namespace {

using nlohmann::json;
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

// A TrainJob is held to upstream's webhook against the runtime the backend would build it from.
TEST(JobServiceTest, TrainJobsAreAdmittedAgainstTheirRuntime) {
  CoreEnv env;
  const std::string train_job = R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tj}
spec:
  runtimeRef: {name: torch-distributed}
  trainer: {numNodes: 2, env: [{name: PET_NNODES, value: "9"}]}
)";
  auto missing = env.Create(train_job);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("must be created before the TrainJob is created"),
            std::string::npos)
      << missing.status();

  env.backend.SetTrainJobRuntime(R"({"apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime", "metadata": {"name": "torch-distributed"},
    "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {"replicatedJobs": [
      {"name": "node", "replicas": 1,
       "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                    "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "t"}]}}}}}]}}}})");
  auto reserved = env.Create(train_job);
  EXPECT_EQ(reserved.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(reserved.status().message().find("spec.trainer.env"), std::string::npos)
      << reserved.status();
  EXPECT_EQ(StoredJobs(env), 0u);

  std::string fine = train_job;
  fine.replace(fine.find(", env: ["),
               std::string(", env: [{name: PET_NNODES, value: \"9\"}]").size(), "");
  auto created = env.Create(fine);
  ASSERT_TRUE(created.ok()) << created.status() << "\n" << fine;
  EXPECT_EQ(created->kind(), api::v1::TRAIN_JOB);
  EXPECT_EQ(StoredJobs(env), 1u);
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

// A structured job as a client sends it: the manifest decoded, not defaulted.
api::v1::TrainingJob StructuredJob(const std::string& name) {
  auto jobs = api::v1::codec::ParseManifests(PyTorchManifest(name));
  EXPECT_TRUE(jobs.ok()) << jobs.status();
  return jobs->front();
}

std::string& WorkerTemplate(api::v1::TrainingJob& job) {
  return *(*job.mutable_spec()->mutable_replica_specs())["Worker"].mutable_template_json();
}

// `depth` arrays nested in each other, as JSON text.
std::string NestedArrays(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

constexpr char kWorker[] = "spec.pytorchReplicaSpecs.Worker.template";
constexpr char kContainer[] = "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0]";

struct HostileCase {
  const char* what;
  std::function<void(api::v1::TrainingJob&)> spoil;
  // The line of the error: its field path and (the start of) its message.
  std::string want;
};

// Each case a job that must be refused with InvalidArgument naming the field.
std::vector<HostileCase> HostileJobs() {
  auto extra = [](std::string text) {
    return [text](api::v1::TrainingJob& j) { j.mutable_metadata()->set_extra_json(text); };
  };
  auto tmpl = [](std::string text) {
    return [text](api::v1::TrainingJob& j) { WorkerTemplate(j) = text; };
  };
  auto container = [](std::string fields) {
    return [fields](api::v1::TrainingJob& j) {
      WorkerTemplate(j) = absl::StrCat(
          R"({"spec":{"containers":[{"name":"pytorch","image":"busybox",)", fields, "}]}}");
    };
  };
  const std::string obj = "must be a JSON object (the metadata fields ObjectMeta does not model)";
  return {
      {"extra_json a list", extra("[1,2]"),
       absl::StrCat("metadata.extra_json: ", obj, ", got a list")},
      {"extra_json null", extra("null"), absl::StrCat("metadata.extra_json: ", obj, ", got null")},
      {"extra_json a string", extra(R"("x")"),
       absl::StrCat("metadata.extra_json: ", obj, ", got string \"x\"")},
      {"extra_json a number", extra("7"), absl::StrCat("metadata.extra_json: ", obj)},
      {"extra_json not JSON", extra("{finalizers: [a]}"),
       "metadata.extra_json: extra_json is not valid JSON: "},
      {"extra_json cut short", extra(R"({"finalizers": [)"),
       "metadata.extra_json: extra_json is not valid JSON: "},
      {"extra_json a field ObjectMeta has", extra(R"({"labels": {"a": "b"}})"),
       "metadata.extra_json: must not hold \"labels\""},
      {"extra_json nested 100000 deep", extra(R"({"x":)" + NestedArrays(100000) + "}"),
       "metadata.extra_json: extra_json: line 1, column "},
      {"extra_json of a million values",
       extra(R"({"x":[)" + absl::StrJoin(std::vector<std::string>(1000001, "0"), ",") + "]}"),
       "metadata.extra_json: extra_json: line 1, column "},
      {"extra_json with a duplicate key", extra(R"({"finalizers": [], "finalizers": []})"),
       "metadata.extra_json: extra_json: line 1, column "},
      {"extra_json over what Kubernetes stores",
       extra(absl::StrCat(R"({"x":")", std::string(2 << 20, 'x'), R"("})")),
       "metadata: the job is "},
      {"template_json a list", tmpl("[1,2]"),
       absl::StrCat(kWorker, ": must be an object (a core/v1 PodTemplateSpec), got a list")},
      {"template_json a string", tmpl(R"("x")"),
       absl::StrCat(kWorker, ": must be an object (a core/v1 PodTemplateSpec), got string")},
      {"template_json not JSON", tmpl("spec: {}"),
       absl::StrCat(kWorker, ": template_json is not valid JSON: ")},
      {"template_json nested 100000 deep", tmpl(R"({"x":)" + NestedArrays(100000) + "}"),
       absl::StrCat(kWorker, ": template_json: line 1, column ")},
      // 97 levels of its own and 4 around it in a manifest: one too many there, and so here.
      {"template_json one level deeper than a manifest allows",
       tmpl(R"({"x":)" + NestedArrays(96) + "}"),
       absl::StrCat(kWorker, ": template_json: line 1, column ")},
      {"containers not a list", tmpl(R"({"spec":{"containers":{"name":"pytorch"}}})"),
       absl::StrCat(kWorker, ".spec.containers: must be a list, got an object")},
      {"ports a string", container(R"("ports":"x")"),
       absl::StrCat(kContainer, ".ports: must be a list, got string \"x\"")},
      {"a port's name a number", container(R"("ports":[{"name":5,"containerPort":80}])"),
       absl::StrCat(kContainer, ".ports[0].name: must be a string, got integer 5")},
      {"env value a number", container(R"("env":[{"name":"A","value":5}])"),
       absl::StrCat(kContainer, ".env[0].value: must be a string, got integer 5")},
      {"command a string", container(R"("command":"true")"),
       absl::StrCat(kContainer, ".command: must be a list, got string \"true\"")},
      {"metrics_json an object",
       [](api::v1::TrainingJob& j) {
         j.mutable_spec()->mutable_elastic_policy()->set_metrics_json("{}");
       },
       "spec.elasticPolicy.metrics: must be a list of autoscaling/v2 MetricSpecs, got an object"},
      {"metrics_json not JSON",
       [](api::v1::TrainingJob& j) {
         j.mutable_spec()->mutable_elastic_policy()->set_metrics_json("[");
       },
       "spec.elasticPolicy.metrics: metrics_json is not valid JSON: "},
      {"status label_selector_json a list",
       [](api::v1::TrainingJob& j) {
         (*j.mutable_status()->mutable_replica_statuses())["Worker"].set_label_selector_json("[1]");
       },
       "status.replicaStatuses.Worker.labelSelector: must be an object (a metav1.LabelSelector)"},
      {"a field of another kind",
       [](api::v1::TrainingJob& j) { j.mutable_spec()->set_slots_per_worker(2); },
       "spec.slotsPerWorker: not a field of PyTorchJob (only of MPIJob)"},
      {"no kind", [](api::v1::TrainingJob& j) { j.set_kind(api::v1::JOB_KIND_UNSPECIFIED); },
       "kind: must be one of "},
  };
}

TEST(JobServiceTest, HostileStructuredJobsAreRefusedNamingTheField) {
  CoreEnv env;
  CreateRequest before;
  before.job = StructuredJob("before");
  ASSERT_TRUE(env.service->Create(before).ok());
  for (const HostileCase& tc : HostileJobs()) {
    SCOPED_TRACE(tc.what);
    for (bool dry_run : {true, false}) {
      CreateRequest request;
      request.job = StructuredJob("hostile");
      tc.spoil(*request.job);
      request.dry_run = dry_run;
      auto job = env.service->Create(request);
      ASSERT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument) << job.status();
      const std::string msg(job.status().message());
      EXPECT_NE(msg.find(tc.want), std::string::npos)
          << "want: " << tc.want << "\ngot: " << msg.substr(0, 400);
    }
  }
  // Nothing refused was stored, and what was stored before reads and encodes as before.
  auto list = env.service->List({});
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->jobs.size(), 1u);
  EXPECT_EQ(list->jobs[0].metadata().name(), "before");
  auto got = env.service->Get("default", "before");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(api::v1::codec::JobToJsonChecked(*got).ok());
}

// Admission reads a structured job as its manifest: what it stores is what the manifest gives.
TEST(JobServiceTest, StructuredJobIsStoredAsItsManifestWouldBe) {
  CoreEnv env;
  CreateRequest request;
  request.job = StructuredJob("s");
  auto* specs = request.job->mutable_spec()->mutable_replica_specs();
  api::v1::ReplicaSpec worker = specs->at("Worker");
  specs->erase("Worker");
  worker.set_template_json(
      R"( {"spec": {"containers": [{"image": "busybox", "name": "pytorch"}]}} )");
  (*specs)["worker"] = worker;
  request.job->mutable_metadata()->set_extra_json(R"({"finalizers": ["a/b"]})");
  auto job = env.service->Create(request);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec().replica_specs().count("worker"), 0u);
  const std::string& tmpl = job->spec().replica_specs().at("Worker").template_json();
  EXPECT_EQ(tmpl.find(' '), std::string::npos) << tmpl;  // normalised, as a manifest's
  EXPECT_EQ(job->metadata().extra_json(), R"({"finalizers":["a/b"]})");
}

// The same malformed content, once in a manifest and once in a structured job, gets the same
// message: one decoder and one validation serve both (the manifest's decoding problems are
// preceded by "manifest: ").
TEST(JobServiceTest, ManifestAndStructuredJobGetTheSameMessage) {
  struct Case {
    const char* what;
    // The manifest's JSON: where to put `value`.
    std::string pointer;
    std::string value;
    std::function<void(api::v1::TrainingJob&)> spoil;
  };
  const std::string worker = "/spec/pytorchReplicaSpecs/Worker";
  const std::string bad_ports =
      R"({"spec":{"containers":[{"name":"pytorch","image":"busybox","ports":"x"}]}})";
  const std::string bad_env =
      R"({"spec":{"containers":[{"name":"pytorch","image":"busybox","env":[{"name":"A","value":5}]}]}})";
  const std::vector<Case> cases = {
      {"ports a string", worker + "/template", bad_ports,
       [&](api::v1::TrainingJob& j) { WorkerTemplate(j) = bad_ports; }},
      {"env value a number", worker + "/template", bad_env,
       [&](api::v1::TrainingJob& j) { WorkerTemplate(j) = bad_env; }},
      {"template a list", worker + "/template", "[1,2]",
       [](api::v1::TrainingJob& j) { WorkerTemplate(j) = "[1,2]"; }},
      {"no containers", worker + "/template", R"({"spec":{}})",
       [](api::v1::TrainingJob& j) { WorkerTemplate(j) = R"({"spec":{}})"; }},
      {"metrics an object", "/spec/elasticPolicy", R"({"metrics":{}})",
       [](api::v1::TrainingJob& j) {
         j.mutable_spec()->mutable_elastic_policy()->set_metrics_json("{}");
       }},
      {"labelSelector a list", "/status/replicaStatuses/Worker", R"({"labelSelector":[1]})",
       [](api::v1::TrainingJob& j) {
         (*j.mutable_status()->mutable_replica_statuses())["Worker"].set_label_selector_json("[1]");
       }},
      {"a field of another kind", "/spec/slotsPerWorker", "2",
       [](api::v1::TrainingJob& j) { j.mutable_spec()->set_slots_per_worker(2); }},
      {"a bad name", "/metadata/name", R"("Bad_Name")",
       [](api::v1::TrainingJob& j) { j.mutable_metadata()->set_name("Bad_Name"); }},
  };
  CoreEnv env;
  for (const Case& tc : cases) {
    SCOPED_TRACE(tc.what);
    json manifest = api::v1::codec::JobToJson(StructuredJob("same"));
    manifest[json::json_pointer(tc.pointer)] = json::parse(tc.value);
    CreateRequest from_manifest;
    from_manifest.manifest = manifest.dump();
    CreateRequest from_job;
    from_job.job = StructuredJob("same");
    tc.spoil(*from_job.job);
    auto a = env.service->Create(from_manifest);
    auto b = env.service->Create(from_job);
    ASSERT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << a.status();
    ASSERT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument) << b.status();
    std::string manifest_message(a.status().message());
    if (manifest_message.rfind("manifest: ", 0) == 0) manifest_message.erase(0, 10);
    EXPECT_EQ(manifest_message, b.status().message());
  }
  EXPECT_EQ(StoredJobs(env), 0u);
}

// A record stored before admission recoded structured jobs: reading it back never aborts, its
// encoding is an error naming the field, and the controller fails it visibly.
TEST(JobServiceTest, AStoredRecordNoManifestCouldGiveIsReadableAndFails) {
  CoreEnv env;
  ASSERT_TRUE(env.Create(PyTorchManifest("good")).ok());
  api::v1::TrainingJob bad = StructuredJob("bad");
  bad.mutable_metadata()->set_namespace_("default");
  bad.mutable_metadata()->set_extra_json("[1,2]");
  ASSERT_TRUE(env.store->Create(bad).ok());
  api::v1::TrainingJob ports = StructuredJob("ports");
  ports.mutable_metadata()->set_namespace_("default");
  WorkerTemplate(ports) = R"({"spec":{"containers":[{"name":"pytorch","image":"b","ports":"x"}]}})";
  ASSERT_TRUE(env.store->Create(ports).ok());

  auto list = env.service->List({});
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->jobs.size(), 3u);
  for (const api::v1::TrainingJob& job : list->jobs) {
    SCOPED_TRACE(job.metadata().name());
    json manifest = api::v1::codec::JobToJson(job);  // never throws
    EXPECT_TRUE(manifest.is_object());
    auto checked = api::v1::codec::JobToJsonChecked(job);
    EXPECT_EQ(checked.ok(), job.metadata().name() != "bad") << checked.status();
    if (!checked.ok()) {
      EXPECT_NE(checked.status().message().find("metadata.extra_json"), std::string::npos);
    }
    EXPECT_FALSE(api::v1::codec::JobsToYaml({job}).empty());
    EXPECT_FALSE(api::v1::codec::JobsToJson({job}).empty());
  }
  env.StartController();
  EXPECT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "bad", "Failed"); }));
  EXPECT_TRUE(CoreEnv::WaitFor([&] { return env.HasCondition("default", "ports", "Failed"); }));
  auto good = env.service->Get("default", "good");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_FALSE(env.HasCondition("default", "good", "Failed"));
}

}  // namespace
}  // namespace coach::core
