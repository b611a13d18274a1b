#include "operator/reconcile/progress_report_env.h"

#include <gtest/gtest.h>

#include <string>

#include "operator/model/testing/job_builder.h"
#include "operator/reconcile/desired_objects.h"

namespace coach::reconcile {
namespace {

using testing::JobBuilder;
using testing::MakePyTorchJob;

constexpr char kWorkerTemplate[] = R"({"spec":{"containers":[
  {"name":"sidecar","image":"s","command":["side"]},
  {"name":"pytorch","image":"user/train:1","command":["python","train.py"],
   "env":[{"name":"A","value":"1"}]}]}})";

JobBuilder Job() {
  return MakePyTorchJob("ns", "j").Workers(2).Template("Worker", kWorkerTemplate);
}

model::ReconcileConfig Reporting(const std::string& ca = "") {
  model::ReconcileConfig config;
  config.launcher_image = "ghcr.io/coach/coach-operator:1.2.3";
  config.progress_report_address = "coach.coach-system.svc:7450";
  config.progress_report_ca_pem = ca;
  return config;
}

Json Pod(const model::Job& job, const model::ReconcileConfig& config, int index = 0) {
  absl::StatusOr<model::KubeObject> pod = DesiredPod(job, "Worker", index, config);
  EXPECT_TRUE(pod.ok()) << pod.status();
  return pod.ok() ? pod->body : Json::object();
}

const Json* Env(const Json& container, const std::string& name) {
  if (!container.contains("env")) return nullptr;
  for (const Json& e : container["env"]) {
    if (e.value("name", "") == name) return &e;
  }
  return nullptr;
}

TEST(ProgressReportEnvTest, ADeadlineJobBehindTheLauncherGetsItsTokenAndAddress) {
  const model::Job job = Job()
                             .Annotation("coach.dev/launcher", "true")
                             .Annotation("coach.dev/progress-deadline", "10m")
                             .Build();
  for (int index : {0, 1}) {
    const Json spec = Pod(job, Reporting(), index)["spec"];
    EXPECT_EQ(spec["volumes"], Json::parse(R"([{"name":"coach-launch","emptyDir":{}},
      {"name":"coach-progress-token","projected":{"sources":[{"serviceAccountToken":
        {"audience":"coach","expirationSeconds":3600,"path":"token"}}]}}])"));
    const Json& c = spec["containers"][1];
    EXPECT_EQ(c["volumeMounts"], Json::parse(R"([
      {"name":"coach-launch","mountPath":"/coach","readOnly":true},
      {"name":"coach-progress-token","mountPath":"/var/run/secrets/coach.dev/progress",
       "readOnly":true}])"));
    // After the template's own and the framework's variables.
    Json added = Json::array();
    for (const Json& e : c["env"]) {
      if (e["name"].get<std::string>().rfind("COACH_", 0) == 0) added.push_back(e);
    }
    EXPECT_EQ(c["env"][0], Json::parse(R"({"name":"A","value":"1"})"));
    EXPECT_EQ(added, Json::parse(R"([
      {"name":"COACH_PROGRESS_ADDRESS","value":"coach.coach-system.svc:7450"},
      {"name":"COACH_PROGRESS_TOKEN_FILE","value":"/var/run/secrets/coach.dev/progress/token"},
      {"name":"COACH_POD_NAMESPACE","valueFrom":{"fieldRef":{"fieldPath":"metadata.namespace"}}},
      {"name":"COACH_POD_NAME","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}])"));
    // Only the default container, which coach-launch runs in.
    EXPECT_FALSE(spec["containers"][0].contains("volumeMounts"));
    EXPECT_EQ(Env(spec["containers"][0], "COACH_PROGRESS_ADDRESS"), nullptr);
  }
}

TEST(ProgressReportEnvTest, WithTlsTheCaGoesInline) {
  const model::Job job = Job()
                             .Annotation("coach.dev/launcher", "true")
                             .Annotation("coach.dev/restart-scope", "Job")
                             .Build();
  const std::string pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  const Json pod = Pod(job, Reporting(pem));
  const Json& c = pod["spec"]["containers"][1];
  ASSERT_NE(Env(c, "COACH_PROGRESS_CA_PEM"), nullptr);
  EXPECT_EQ((*Env(c, "COACH_PROGRESS_CA_PEM"))["value"], pem);
  ASSERT_NE(Env(c, "COACH_PROGRESS_ADDRESS"), nullptr);
  // A job-scoped job's pods carry the attempt as before.
  ASSERT_NE(Env(c, "COACH_ATTEMPT"), nullptr);
}

// Checkpoint on notice applies to a job that restarts as a whole: its launcher holds a SIGTERM
// for the request an eviction brings. A job that only has a progress deadline gets no wait.
TEST(ProgressReportEnvTest, AJobScopedJobsLauncherWaitsForANoticeOnSigterm) {
  const model::Job scoped = Job()
                                .Annotation("coach.dev/launcher", "true")
                                .Annotation("coach.dev/restart-scope", "Job")
                                .Build();
  const Json scoped_pod = Pod(scoped, Reporting());
  const Json& c = scoped_pod["spec"]["containers"][1];
  ASSERT_NE(Env(c, "COACH_NOTICE_WAIT"), nullptr);
  EXPECT_EQ((*Env(c, "COACH_NOTICE_WAIT"))["value"], "5");

  const model::Job deadline = Job()
                                  .Annotation("coach.dev/launcher", "true")
                                  .Annotation("coach.dev/progress-deadline", "10m")
                                  .Build();
  const Json deadline_pod = Pod(deadline, Reporting());
  const Json& d = deadline_pod["spec"]["containers"][1];
  ASSERT_NE(Env(d, "COACH_PROGRESS_ADDRESS"), nullptr);
  EXPECT_EQ(Env(d, "COACH_NOTICE_WAIT"), nullptr);
}

// Each case: a job whose replicas report, or not, and for those that do not, the very pod
// they would get without the setting.
TEST(ProgressReportEnvTest, OnlyJobsBehindTheLauncherThatNeedProgressReport) {
  struct Case {
    const char* name;
    model::Job job;
    bool pytorch_job_scope_default;
    bool reports;
  };
  const Case cases[] = {
      {"launcher + deadline",
       Job()
           .Annotation("coach.dev/launcher", "true")
           .Annotation("coach.dev/progress-deadline", "90s")
           .Build(),
       false, true},
      {"launcher + whole-job restarts",
       Job()
           .Annotation("coach.dev/launcher", "true")
           .Annotation("coach.dev/restart-scope", "Job")
           .Build(),
       false, true},
      {"launcher + the operator's PyTorchJob default",
       Job().Annotation("coach.dev/launcher", "true").Build(), true, true},
      {"launcher alone", Job().Annotation("coach.dev/launcher", "true").Build(), false, false},
      {"launcher, replica scope asked",
       Job()
           .Annotation("coach.dev/launcher", "true")
           .Annotation("coach.dev/restart-scope", "Replica")
           .Build(),
       true, false},
      {"no launcher, deadline", Job().Annotation("coach.dev/progress-deadline", "90s").Build(),
       false, false},
      {"launcher off, whole-job restarts",
       Job()
           .Annotation("coach.dev/launcher", "false")
           .Annotation("coach.dev/restart-scope", "Job")
           .Build(),
       false, false},
  };
  for (const Case& c : cases) {
    model::ReconcileConfig with = Reporting();
    with.pytorch_job_scope_default = c.pytorch_job_scope_default;
    model::ReconcileConfig without = with;
    without.progress_report_address.clear();
    EXPECT_EQ(ReportsProgress(c.job, with), c.reports) << c.name;
    EXPECT_FALSE(ReportsProgress(c.job, without)) << c.name;
    const Json pod = Pod(c.job, with);
    const bool has_address = Env(pod["spec"]["containers"][1], "COACH_PROGRESS_ADDRESS") != nullptr;
    EXPECT_EQ(has_address, c.reports) << c.name;
    if (!c.reports) {
      EXPECT_EQ(pod.dump(), Pod(c.job, without).dump()) << c.name;
    }
  }
}

}  // namespace
}  // namespace coach::reconcile
