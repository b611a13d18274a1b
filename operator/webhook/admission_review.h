#pragma once

// The operator's admission webhooks as the API server calls them: an AdmissionReview
// (admission.k8s.io/v1) posted at one of upstream Trainer v2.3's webhook paths is answered with
// upstream's decision (operator/trainer/admission.h, the rules `coach submit` runs too), in
// upstream's AdmissionReview shape: a refusal is `allowed: false` with status code 403, reason
// Forbidden and the aggregated field errors as the message, so that kubectl prints
// `admission webhook "<name>" denied the request: <path>: Invalid value: ...`; warnings ride
// along; the defaulter answers with a JSON patch.
//
// Pure: the runtime a TrainJob names comes from `RuntimeFinder`, the time from `now`.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace coach::webhook {

// Upstream's paths (trainer's `manifests/base/webhook`), so that its webhook configurations
// work unchanged apart from the Service.
inline constexpr char kTrainJobDefaulterPath[] = "/mutate-trainer-kubeflow-org-v1alpha1-trainjob";
inline constexpr char kTrainJobValidatorPath[] = "/validate-trainer-kubeflow-org-v1alpha1-trainjob";
inline constexpr char kTrainingRuntimeValidatorPath[] =
    "/validate-trainer-kubeflow-org-v1alpha1-trainingruntime";
inline constexpr char kClusterTrainingRuntimeValidatorPath[] =
    "/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime";

// The largest AdmissionReview read: an object and its old version at etcd's 1.5 MiB limit each,
// with the review around them.
inline constexpr size_t kMaxReviewBytes = 4 << 20;
// Deeper JSON is refused before it is parsed (the review adds 3 levels around an object).
inline constexpr int kMaxReviewDepth = 103;

// The runtime named (kind "TrainingRuntime" in namespace `ns`, or "ClusterTrainingRuntime"),
// nullopt when it does not exist. An error (Unavailable, PermissionDenied) refuses the object
// with status code 500 and the error's message (controller-runtime's Errored).
using RuntimeFinder = std::function<absl::StatusOr<std::optional<nlohmann::json>>(
    const std::string& kind, const std::string& ns, const std::string& name)>;

struct ReviewAnswer {
  int http_status = 200;
  std::string body;  // an AdmissionReview (JSON), or a plain message when there is no review
  // For the operator's metrics: "allowed", "denied", "patched", "malformed" or "error".
  std::string outcome;
};

// Whether `path` is one of the four webhooks above.
bool IsWebhookPath(absl::string_view path);

// Upstream's name of the webhook at `path` ("validator.trainjob.trainer.kubeflow.org"); "" for
// other paths.
std::string WebhookName(absl::string_view path);

// Answers `body`, an AdmissionReview posted at `path`. A body that is not a v1 AdmissionReview
// with a request (bad JSON, deeper than kMaxReviewDepth, larger than kMaxReviewBytes, no uid, an
// object of another kind than the path's) is answered 400, with a review refusing it when its
// uid could be read. Never throws.
ReviewAnswer AnswerReview(absl::string_view path, absl::string_view body,
                          const RuntimeFinder& find_runtime, absl::Time now);

}  // namespace coach::webhook
