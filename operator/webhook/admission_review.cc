#include "operator/webhook/admission_review.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "operator/trainer/admission.h"

namespace coach::webhook {
namespace {

using nlohmann::json;

constexpr char kGroup[] = "trainer.kubeflow.org";

struct Route {
  const char* path;
  const char* name;  // upstream's webhook name
  const char* kind;  // request.kind.kind the path serves
  enum { kDefaultTrainJob, kValidateTrainJob, kValidateRuntime } action;
};

constexpr Route kRoutes[] = {
    {kTrainJobDefaulterPath, "defaulter.trainjob.trainer.kubeflow.org", "TrainJob",
     Route::kDefaultTrainJob},
    {kTrainJobValidatorPath, "validator.trainjob.trainer.kubeflow.org", "TrainJob",
     Route::kValidateTrainJob},
    {kTrainingRuntimeValidatorPath, "validator.trainingruntime.trainer.kubeflow.org",
     "TrainingRuntime", Route::kValidateRuntime},
    {kClusterTrainingRuntimeValidatorPath, "validator.clustertrainingruntime.trainer.kubeflow.org",
     "ClusterTrainingRuntime", Route::kValidateRuntime},
};

const Route* RouteFor(absl::string_view path) {
  for (const Route& route : kRoutes) {
    if (path == route.path) return &route;
  }
  return nullptr;
}

// Nesting of arrays and objects, strings skipped: checked before parsing, so that a hostile
// body cannot exhaust the stack of the recursive parser or of what walks the value.
bool DeeperThan(absl::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

const json* Member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string StringAt(const json& object, const char* key) {
  const json* value = Member(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : "";
}

ReviewAnswer Malformed(const std::string& why) {
  return ReviewAnswer{400, absl::StrCat("malformed AdmissionReview: ", why, "\n"), "malformed"};
}

// One AdmissionReview response for `uid`.
class Response {
 public:
  explicit Response(std::string uid) { response_["uid"] = std::move(uid); }

  ReviewAnswer Allow(std::vector<std::string> warnings, std::string outcome = "allowed") {
    response_["allowed"] = true;
    response_["status"] = {{"code", 200}};
    return Done(std::move(warnings), std::move(outcome));
  }
  // controller-runtime's Denied: what upstream's validators answer with their field errors.
  ReviewAnswer Deny(const std::string& message, std::vector<std::string> warnings) {
    response_["allowed"] = false;
    response_["status"] = {{"code", 403}, {"reason", "Forbidden"}, {"message", message}};
    return Done(std::move(warnings), "denied");
  }
  // controller-runtime's Errored: an object it cannot read (400), a lookup that failed (500).
  ReviewAnswer Error(int code, const std::string& message) {
    response_["allowed"] = false;
    response_["status"] = {{"code", code}, {"message", message}};
    return Done({}, code == 400 ? "malformed" : "error");
  }
  ReviewAnswer Patch(const json& operations) {
    response_["patchType"] = "JSONPatch";
    response_["patch"] = absl::Base64Escape(operations.dump());
    return Allow({}, "patched");
  }

 private:
  ReviewAnswer Done(std::vector<std::string> warnings, std::string outcome) {
    if (!warnings.empty()) response_["warnings"] = std::move(warnings);
    const json review = {{"apiVersion", "admission.k8s.io/v1"},
                         {"kind", "AdmissionReview"},
                         {"response", response_}};
    return ReviewAnswer{200, review.dump(), std::move(outcome)};
  }

  json response_ = json::object();
};

ReviewAnswer Decide(const Route& route, const json& request, const RuntimeFinder& find_runtime,
                    absl::Time now, Response& response) {
  const json* sent = Member(request, "object");
  if (sent == nullptr || !sent->is_object()) {
    return response.Error(400, "request.object: must be an object");
  }
  // The API server puts the request's namespace on a created object before admission; a
  // review that left it out is read the same way.
  json filled;
  const json* object = sent;
  const std::string request_ns = StringAt(request, "namespace");
  if (!request_ns.empty() && (Member(*sent, "metadata") == nullptr ||
                              StringAt((*sent)["metadata"], "namespace").empty())) {
    filled = *sent;
    filled["metadata"]["namespace"] = request_ns;
    object = &filled;
  }
  const std::string operation = StringAt(request, "operation");
  // Only creates and updates are registered; anything else has nothing to check.
  if (operation != "CREATE" && operation != "UPDATE") return response.Allow({});
  const json* old = nullptr;
  if (operation == "UPDATE") {
    old = Member(request, "oldObject");
    if (old == nullptr || !old->is_object()) {
      return response.Error(400, "request.oldObject: must be an object on UPDATE");
    }
    // A TrainJob (or runtime) being deleted is only losing finalizers: refusing that, because
    // its runtime went meanwhile, would keep it forever.
    if (Member(*object, "metadata") != nullptr &&
        Member((*object)["metadata"], "deletionTimestamp") != nullptr) {
      return response.Allow({});
    }
  }

  if (route.action == Route::kDefaultTrainJob) {
    absl::StatusOr<json> defaulted = trainer::admission::DefaultTrainJob(*object, old, now);
    if (!defaulted.ok()) return response.Error(400, std::string(defaulted.status().message()));
    const json* before = Member(*object, "spec");
    const json* after = Member(*defaulted, "spec");
    const json* patches_before = before == nullptr ? nullptr : Member(*before, "runtimePatches");
    const json* patches_after = after == nullptr ? nullptr : Member(*after, "runtimePatches");
    if (patches_after == nullptr ||
        (patches_before != nullptr && *patches_before == *patches_after)) {
      return response.Allow({});
    }
    return response.Patch(json::array(
        {{{"op", "replace"}, {"path", "/spec/runtimePatches"}, {"value", *patches_after}}}));
  }

  absl::StatusOr<trainer::admission::Result> result;
  if (route.action == Route::kValidateRuntime) {
    result = trainer::admission::ValidateTrainingRuntime(*object, old);
  } else {
    std::optional<json> runtime;
    const json* spec = Member(*object, "spec");
    const json* ref = spec == nullptr ? nullptr : Member(*spec, "runtimeRef");
    if (ref != nullptr && ref->is_object()) {
      const std::string kind = StringAt(*ref, "kind");
      const std::string name = StringAt(*ref, "name");
      // Other groups and kinds are refused by the validator without a lookup.
      if (StringAt(*ref, "apiGroup") == kGroup && !name.empty() &&
          (kind == "TrainingRuntime" || kind == "ClusterTrainingRuntime")) {
        // The request's namespace, already on the object (filled above when it was not).
        const std::string ns = StringAt(object->value("metadata", json::object()), "namespace");
        absl::StatusOr<std::optional<json>> found = find_runtime(kind, ns, name);
        if (!found.ok()) {
          return response.Error(500, absl::StrCat("looking up ", kind, " \"", name,
                                                  "\": ", found.status().message()));
        }
        runtime = *std::move(found);
      }
    }
    result = trainer::admission::ValidateTrainJob(*object, runtime ? &*runtime : nullptr, old);
  }
  if (!result.ok()) return response.Error(400, std::string(result.status().message()));
  if (!result->allowed()) return response.Deny(result->Message(), std::move(result->warnings));
  return response.Allow(std::move(result->warnings));
}

}  // namespace

bool IsWebhookPath(absl::string_view path) { return RouteFor(path) != nullptr; }

std::string WebhookName(absl::string_view path) {
  const Route* route = RouteFor(path);
  return route == nullptr ? "" : route->name;
}

ReviewAnswer AnswerReview(absl::string_view path, absl::string_view body,
                          const RuntimeFinder& find_runtime, absl::Time now) {
  const Route* route = RouteFor(path);
  if (route == nullptr) return ReviewAnswer{404, "no webhook at this path\n", "malformed"};
  if (body.size() > kMaxReviewBytes) {
    return Malformed(absl::StrCat("larger than ", kMaxReviewBytes, " bytes"));
  }
  if (DeeperThan(body, kMaxReviewDepth)) {
    return Malformed(absl::StrCat("nested deeper than ", kMaxReviewDepth, " levels"));
  }
  const json review = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (review.is_discarded()) return Malformed("not JSON");
  if (!review.is_object()) return Malformed("not a JSON object");
  if (StringAt(review, "apiVersion") != "admission.k8s.io/v1" ||
      StringAt(review, "kind") != "AdmissionReview") {
    return Malformed("apiVersion/kind: want admission.k8s.io/v1 AdmissionReview");
  }
  const json* request = Member(review, "request");
  if (request == nullptr || !request->is_object()) return Malformed("request: missing");
  const std::string uid = StringAt(*request, "uid");
  if (uid.empty()) return Malformed("request.uid: missing");
  Response response(uid);
  const json* kind = Member(*request, "kind");
  if (kind == nullptr || StringAt(*kind, "group") != kGroup ||
      StringAt(*kind, "kind") != route->kind) {
    return response.Error(
        400, absl::StrCat("request.kind: this webhook admits ", kGroup, " ", route->kind, " only"));
  }
  try {
    return Decide(*route, *request, find_runtime, now, response);
  } catch (const json::exception& e) {
    // The admission functions check every type they read; this keeps a missed one from
    // ending the server's thread.
    return response.Error(400, absl::StrCat("malformed object: ", e.what()));
  }
}

}  // namespace coach::webhook
