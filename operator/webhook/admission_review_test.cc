// AdmissionReviews as the API server posts them, answered as upstream's webhooks answer:
// the five objects upstream refuses and coach once stored, the defaulter's patch, warnings,
// and reviews that are malformed on purpose.

#include "operator/webhook/admission_review.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "operator/trainer/reference_data.h"

namespace coach::webhook {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

const absl::Time kNow = absl::FromUnixSeconds(1800000000);  // 2027-01-15T08:00:00Z

json TorchRuntime() {
  absl::StatusOr<json> runtime = trainer::testing::LoadReferenceKind(
      "runtimes/torch_distributed.yaml", "ClusterTrainingRuntime");
  EXPECT_TRUE(runtime.ok()) << runtime.status();
  return runtime.ok() ? *runtime : json::object();
}

json TrainJob(const std::string& runtime_kind, const std::string& runtime_name) {
  return trainer::testing::WithDefaults(
      {{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
       {"kind", "TrainJob"},
       {"metadata", {{"name", "job"}, {"namespace", "team"}}},
       {"spec",
        {{"runtimeRef",
          {{"apiGroup", "trainer.kubeflow.org"}, {"kind", runtime_kind}, {"name", runtime_name}}},
         {"trainer", {{"numNodes", 2}}}}}});
}

std::string Review(const std::string& kind, const std::string& operation, const json& object,
                   const json& old = nullptr) {
  json request = {
      {"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
      {"kind", {{"group", "trainer.kubeflow.org"}, {"version", "v1alpha1"}, {"kind", kind}}},
      {"namespace", "team"},
      {"operation", operation},
      {"object", object}};
  if (!old.is_null()) request["oldObject"] = old;
  // Cluster-scoped objects come without one.
  if (kind != "ClusterTrainingRuntime") request["namespace"] = "team";
  return json({{"apiVersion", "admission.k8s.io/v1"},
               {"kind", "AdmissionReview"},
               {"request", request}})
      .dump();
}

// A finder that knows the shipped torch runtime as ClusterTrainingRuntime "torch-distributed"
// and records what it was asked.
struct Finder {
  std::string asked;
  json cluster_runtime = TorchRuntime();
  RuntimeFinder Get() {
    return [this](const std::string& kind, const std::string& ns,
                  const std::string& name) -> absl::StatusOr<std::optional<json>> {
      asked = absl::StrCat(kind, "/", ns, "/", name);
      if (kind == "ClusterTrainingRuntime" && name == "torch-distributed") return cluster_runtime;
      return std::nullopt;
    };
  }
};

json Response(const ReviewAnswer& answer) {
  EXPECT_EQ(answer.http_status, 200) << answer.body;
  const json review = json::parse(answer.body, nullptr, false);
  EXPECT_TRUE(review.is_object()) << answer.body;
  EXPECT_EQ(review.value("apiVersion", ""), "admission.k8s.io/v1");
  EXPECT_EQ(review.value("kind", ""), "AdmissionReview");
  const json response = review.value("response", json::object());
  EXPECT_EQ(response.value("uid", ""), "705ab4f5-6393-11e8-b7cc-42010a800002");
  return response;
}

std::string Denied(const ReviewAnswer& answer) {
  const json response = Response(answer);
  EXPECT_FALSE(response.value("allowed", true)) << answer.body;
  EXPECT_EQ(response["status"].value("code", 0), 403) << answer.body;
  EXPECT_EQ(response["status"].value("reason", ""), "Forbidden");
  EXPECT_EQ(answer.outcome, "denied");
  return response["status"].value("message", "");
}

TEST(AnswerReviewTest, TrainJobOnAMissingClusterRuntimeIsRefusedAsUpstream) {
  Finder finder;
  const ReviewAnswer answer = AnswerReview(
      kTrainJobValidatorPath,
      Review("TrainJob", "CREATE", TrainJob("ClusterTrainingRuntime", "nope")), finder.Get(), kNow);
  EXPECT_EQ(Denied(answer),
            "spec.RuntimeRef: Invalid value: {\"name\":\"nope\",\"apiGroup\":\"trainer.kubeflow."
            "org\",\"kind\":\"ClusterTrainingRuntime\"}: clustertrainingruntimes.trainer.kubeflow."
            "org \"nope\" not found: specified clusterTrainingRuntime must be created before the "
            "TrainJob is created");
  EXPECT_EQ(finder.asked, "ClusterTrainingRuntime/team/nope");
}

TEST(AnswerReviewTest, NamespacedRuntimeIsLookedUpInTheRequestsNamespace) {
  Finder finder;
  json job = TrainJob("TrainingRuntime", "mine");
  job["metadata"].erase("namespace");  // generateName creates carry it in the request only
  const std::string message = Denied(
      AnswerReview(kTrainJobValidatorPath, Review("TrainJob", "CREATE", job), finder.Get(), kNow));
  EXPECT_THAT(message, HasSubstr("spec.runtimeRef: Invalid value: "));
  EXPECT_THAT(message, HasSubstr("specified trainingRuntime must be created before"));
  EXPECT_EQ(finder.asked, "TrainingRuntime/team/mine");
}

TEST(AnswerReviewTest, UnknownRuntimeKindIsRefusedWithoutALookup) {
  Finder finder;
  const std::string message = Denied(AnswerReview(
      kTrainJobValidatorPath, Review("TrainJob", "CREATE", TrainJob("MyRuntime", "torch")),
      finder.Get(), kNow));
  EXPECT_EQ(message, "unsupported runtime: MyRuntime.trainer.kubeflow.org");
  EXPECT_EQ(finder.asked, "");
}

TEST(AnswerReviewTest, ValidTrainJobIsAllowed) {
  Finder finder;
  const json response = Response(AnswerReview(
      kTrainJobValidatorPath,
      Review("TrainJob", "CREATE", TrainJob("ClusterTrainingRuntime", "torch-distributed")),
      finder.Get(), kNow));
  EXPECT_TRUE(response.value("allowed", false));
  EXPECT_FALSE(response.contains("warnings"));
}

TEST(AnswerReviewTest, DeprecatedRuntimeIsAllowedWithAWarning) {
  Finder finder;
  finder.cluster_runtime["metadata"]["labels"]["trainer.kubeflow.org/support"] = "deprecated";
  const json response = Response(AnswerReview(
      kTrainJobValidatorPath,
      Review("TrainJob", "CREATE", TrainJob("ClusterTrainingRuntime", "torch-distributed")),
      finder.Get(), kNow));
  EXPECT_TRUE(response.value("allowed", false));
  const json warnings = response.value("warnings", json::array());
  ASSERT_EQ(warnings.size(), 1u) << response.dump();
  EXPECT_THAT(warnings[0].get<std::string>(),
              HasSubstr("ClusterTrainingRuntime \"torch-distributed\" is deprecated"));
}

TEST(AnswerReviewTest, RuntimePatchesChangedWhileRunningAreRefused) {
  Finder finder;
  json old = TrainJob("ClusterTrainingRuntime", "torch-distributed");
  old["spec"]["runtimePatches"] = json::array({{{"manager", "example.com/a"},
                                                {"time", "2027-01-01T00:00:00Z"},
                                                {"trainer", json::object()}}});
  json changed = old;
  changed["spec"]["runtimePatches"][0]["manager"] = "example.com/b";
  const std::string message = Denied(AnswerReview(
      kTrainJobValidatorPath, Review("TrainJob", "UPDATE", changed, old), finder.Get(), kNow));
  EXPECT_THAT(message, HasSubstr("spec.runtimePatches: Forbidden: RuntimePatches can only be "
                                 "modified when the TrainJob is suspended before or after the "
                                 "update"));
}

TEST(AnswerReviewTest, UpdateOfATrainJobBeingDeletedIsAllowed) {
  Finder finder;
  json old = TrainJob("ClusterTrainingRuntime", "gone");
  json deleting = old;
  deleting["metadata"]["deletionTimestamp"] = "2027-01-15T07:00:00Z";
  const json response = Response(AnswerReview(
      kTrainJobValidatorPath, Review("TrainJob", "UPDATE", deleting, old), finder.Get(), kNow));
  EXPECT_TRUE(response.value("allowed", false));
}

json RuntimeWithTrainerJob(const std::string& kind, json job_patch) {
  json runtime = TorchRuntime();
  runtime["kind"] = kind;
  runtime["metadata"]["namespace"] = "team";
  json& jobs = runtime["spec"]["template"]["spec"]["replicatedJobs"];
  for (json& job : jobs) {
    if (job["name"] == "node") job.merge_patch(job_patch);
  }
  return runtime;
}

TEST(AnswerReviewTest, TrainingRuntimeWithoutANodeContainerIsRefused) {
  Finder finder;
  json runtime = RuntimeWithTrainerJob("TrainingRuntime", json::object());
  for (json& job : runtime["spec"]["template"]["spec"]["replicatedJobs"]) {
    if (job["name"] != "node") continue;
    job["template"]["spec"]["template"]["spec"]["containers"][0]["name"] = "trainer";
  }
  const std::string message =
      Denied(AnswerReview(kTrainingRuntimeValidatorPath,
                          Review("TrainingRuntime", "CREATE", runtime), finder.Get(), kNow));
  EXPECT_THAT(message, HasSubstr("must contain the required container for the ancestor: trainer"));
}

TEST(AnswerReviewTest, TrainingRuntimeWithTwoTrainerReplicasIsRefused) {
  Finder finder;
  const json runtime = RuntimeWithTrainerJob("TrainingRuntime", {{"replicas", 2}});
  const std::string message =
      Denied(AnswerReview(kTrainingRuntimeValidatorPath,
                          Review("TrainingRuntime", "CREATE", runtime), finder.Get(), kNow));
  EXPECT_THAT(message, HasSubstr("replicas: Invalid value: 2: always must be 1"));
}

TEST(AnswerReviewTest, ClusterRuntimeUpdateIsValidatedAndTheDisabledLabelSkipsIt) {
  Finder finder;
  json runtime = RuntimeWithTrainerJob("ClusterTrainingRuntime", {{"replicas", 2}});
  runtime["metadata"].erase("namespace");
  json old = TorchRuntime();
  Denied(AnswerReview(kClusterTrainingRuntimeValidatorPath,
                      Review("ClusterTrainingRuntime", "UPDATE", runtime, old), finder.Get(),
                      kNow));
  // The objectSelector matches an update when either version matches: both carry the label.
  runtime["metadata"]["labels"]["trainer.kubeflow.org/webhook-validation"] = "disabled";
  old["metadata"]["labels"]["trainer.kubeflow.org/webhook-validation"] = "disabled";
  EXPECT_TRUE(Response(AnswerReview(kClusterTrainingRuntimeValidatorPath,
                                    Review("ClusterTrainingRuntime", "UPDATE", runtime, old),
                                    finder.Get(), kNow))
                  .value("allowed", false));
}

TEST(AnswerReviewTest, DefaulterStampsRuntimePatchesWithAJsonPatch) {
  Finder finder;
  json job = TrainJob("ClusterTrainingRuntime", "torch-distributed");
  job["spec"]["runtimePatches"] =
      json::array({{{"manager", "example.com/a"}, {"trainer", json::object()}}});
  const ReviewAnswer answer =
      AnswerReview(kTrainJobDefaulterPath, Review("TrainJob", "CREATE", job), finder.Get(), kNow);
  const json response = Response(answer);
  EXPECT_TRUE(response.value("allowed", false));
  EXPECT_EQ(response.value("patchType", ""), "JSONPatch");
  EXPECT_EQ(answer.outcome, "patched");
  std::string patch_text;
  ASSERT_TRUE(absl::Base64Unescape(response.value("patch", ""), &patch_text));
  const json patch = json::parse(patch_text);
  ASSERT_EQ(patch.size(), 1u);
  EXPECT_EQ(patch[0]["op"], "replace");
  EXPECT_EQ(patch[0]["path"], "/spec/runtimePatches");
  EXPECT_EQ(patch[0]["value"][0]["time"], "2027-01-15T08:00:00Z");
  EXPECT_EQ(patch[0]["value"][0]["manager"], "example.com/a");
}

TEST(AnswerReviewTest, DefaulterWithNothingToStampSendsNoPatch) {
  Finder finder;
  const json response = Response(AnswerReview(
      kTrainJobDefaulterPath,
      Review("TrainJob", "CREATE", TrainJob("ClusterTrainingRuntime", "torch-distributed")),
      finder.Get(), kNow));
  EXPECT_TRUE(response.value("allowed", false));
  EXPECT_FALSE(response.contains("patch"));
}

TEST(AnswerReviewTest, FailedLookupRefusesWithCode500) {
  RuntimeFinder failing = [](const std::string&, const std::string&,
                             const std::string&) -> absl::StatusOr<std::optional<json>> {
    return absl::UnavailableError("API server down");
  };
  const ReviewAnswer answer = AnswerReview(
      kTrainJobValidatorPath,
      Review("TrainJob", "CREATE", TrainJob("ClusterTrainingRuntime", "torch-distributed")),
      failing, kNow);
  const json response = Response(answer);
  EXPECT_FALSE(response.value("allowed", true));
  EXPECT_EQ(response["status"].value("code", 0), 500);
  EXPECT_THAT(response["status"].value("message", ""), HasSubstr("API server down"));
  EXPECT_EQ(answer.outcome, "error");
}

TEST(AnswerReviewTest, MalformedReviewsAreRefused) {
  Finder finder;
  const std::string deep = std::string(200, '[') + std::string(200, ']');
  const std::string huge(kMaxReviewBytes + 1, ' ');
  for (const std::string& body :
       {std::string("not json"), std::string("[]"), deep, huge,
        std::string(R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"})"),
        std::string(R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"})"),
        std::string(
            R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}})")}) {
    const ReviewAnswer answer = AnswerReview(kTrainJobValidatorPath, body, finder.Get(), kNow);
    EXPECT_EQ(answer.http_status, 400) << body.substr(0, 80);
    EXPECT_EQ(answer.outcome, "malformed");
  }
  EXPECT_EQ(AnswerReview("/elsewhere", "{}", finder.Get(), kNow).http_status, 404);
  EXPECT_EQ(finder.asked, "");
}

TEST(AnswerReviewTest, ObjectOfAnotherKindOrShapeIsRefusedInTheReview) {
  Finder finder;
  const json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}}}};
  json response = Response(
      AnswerReview(kTrainJobValidatorPath, Review("Pod", "CREATE", pod), finder.Get(), kNow));
  EXPECT_FALSE(response.value("allowed", true));
  EXPECT_EQ(response["status"].value("code", 0), 400);

  json job = TrainJob("ClusterTrainingRuntime", "torch-distributed");
  job["spec"]["trainer"]["numNodes"] = "two";
  response = Response(
      AnswerReview(kTrainJobValidatorPath, Review("TrainJob", "CREATE", job), finder.Get(), kNow));
  EXPECT_FALSE(response.value("allowed", true));
  EXPECT_EQ(response["status"].value("code", 0), 400);
  EXPECT_THAT(response["status"].value("message", ""), HasSubstr("numNodes"));
}

TEST(AnswerReviewTest, DeletesAndConnectsAreAllowedUnchecked) {
  Finder finder;
  const json response = Response(
      AnswerReview(kTrainJobValidatorPath,
                   Review("TrainJob", "DELETE", TrainJob("ClusterTrainingRuntime", "nope")),
                   finder.Get(), kNow));
  EXPECT_TRUE(response.value("allowed", false));
  EXPECT_EQ(finder.asked, "");
}

}  // namespace
}  // namespace coach::webhook
