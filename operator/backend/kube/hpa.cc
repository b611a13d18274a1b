#include "operator/backend/kube/hpa.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "api/v1/defaults.h"
#include "api/v1/field_error.h"
#include "api/v1/job_conditions.h"
#include "api/v1/kinds.h"
#include "api/v1/validation.h"
#include "common/status_macros.h"
#include "operator/backend/kube/object_fields.h"
#include "operator/model/pod_identity.h"
#include "operator/model/replicas.h"

namespace coach::backend::kube {

using nlohmann::json;

namespace {

// The managedBy value under which coach reconciles a v1 job (model::ReconcileConfig's
// controller_name); any other (Kueue's MultiKueue) leaves the job to that controller.
constexpr char kV1Controller[] = "kubeflow.org/training-operator";

bool Finished(const model::Job& job) {
  for (const auto& c : job.status().conditions()) {
    if ((c.type() == api::v1::kJobSucceeded || c.type() == api::v1::kJobFailed) &&
        c.status() == api::v1::kConditionTrue) {
      return true;
    }
  }
  return false;
}

json WithoutNulls(const json& v) {
  if (v.is_object()) {
    json out = json::object();
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!it->is_null()) out[it.key()] = WithoutNulls(*it);
    }
    return out;
  }
  if (v.is_array()) {
    json out = json::array();
    for (const json& e : v) out.push_back(WithoutNulls(e));
    return out;
  }
  return v;
}

}  // namespace

coach::kubeclient::ResourceDescriptor HorizontalPodAutoscalers() {
  return {"autoscaling", "v2", "horizontalpodautoscalers", kHpaKind, true, true};
}

bool TendsHpa(const model::Job& job) {
  const auto& rp = job.spec().run_policy();
  return job.kind() == api::v1::PYTORCH_JOB && !job.metadata().uid().empty() &&
         !job.metadata().has_deletion_timestamp() && !Finished(job) &&
         (rp.managed_by().empty() || rp.managed_by() == kV1Controller);
}

absl::StatusOr<std::optional<json>> DesiredHpa(const model::Job& job) {
  if (!job.spec().has_elastic_policy() || job.spec().elastic_policy().metrics_json().empty() ||
      job.spec().run_policy().suspend()) {
    return std::nullopt;
  }
  // Defaults first, as upstream's webhook has run before its controller reads min and max.
  model::Job defaulted = job;
  api::v1::SetDefaults(&defaulted);
  const api::v1::ElasticPolicy& ep = defaulted.spec().elastic_policy();
  RETURN_IF_ERROR(
      api::v1::FieldErrorsToStatus(api::v1::ValidateElasticMetrics(defaulted.kind(), ep)));
  if (!ep.has_max_replicas()) {
    return absl::InvalidArgumentError(
        "spec.elasticPolicy.maxReplicas: required for a HorizontalPodAutoscaler");
  }
  if (ep.has_min_replicas() && ep.min_replicas() > ep.max_replicas()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.elasticPolicy.minReplicas: must be <= ", "maxReplicas (",
                     ep.max_replicas(), "), got ", ep.min_replicas()));
  }
  const std::string& name = job.metadata().name();
  json spec = {
      {"scaleTargetRef",
       {{"apiVersion", std::string(api::v1::kApiVersion)}, {"kind", "PyTorchJob"}, {"name", name}}},
      {"maxReplicas", ep.max_replicas()},
      {"metrics", json::parse(ep.metrics_json(), nullptr, /*allow_exceptions=*/false)}};
  if (ep.has_min_replicas()) spec["minReplicas"] = ep.min_replicas();
  return json{{"apiVersion", HorizontalPodAutoscalers().ApiVersion()},
              {"kind", kHpaKind},
              {"metadata",
               {{"name", name},
                {"namespace", job.metadata().namespace_()},
                {"labels", {{model::kLabelCoachJobName, name}}},
                {"ownerReferences", reconcile::OwnerReferences(job)}}},
              {"spec", std::move(spec)}};
}

const char* HpaStepName(HpaStep step) {
  switch (step) {
    case HpaStep::kNone:
      return "none";
    case HpaStep::kCreate:
      return "create";
    case HpaStep::kPatch:
      return "patch";
    case HpaStep::kDelete:
      return "delete";
  }
  return "none";
}

bool SameHpaSpec(const json& a, const json& b) { return WithoutNulls(a) == WithoutNulls(b); }

HpaStep NextHpaStep(const std::optional<json>& desired, const HpaView& view) {
  if (!desired.has_value()) {
    return view.cached != nullptr && !view.delete_pending ? HpaStep::kDelete : HpaStep::kNone;
  }
  if (view.cached == nullptr) {
    return view.create_pending ? HpaStep::kNone : HpaStep::kCreate;
  }
  if (view.delete_pending) return HpaStep::kNone;
  const json& want = Field(*desired, "spec");
  const json& have = Field(*view.cached, "spec");
  if (SameHpaSpec(want, have)) return HpaStep::kNone;
  const bool answered = !view.written_spec.empty() && view.written_spec == want.dump() &&
                        view.answered_spec == have.dump();
  return answered ? HpaStep::kNone : HpaStep::kPatch;
}

json HpaPatch(const json& desired, const json& current) {
  json spec = Field(desired, "spec");
  const json& have = Field(current, "spec");
  if (have.is_object()) {
    for (auto it = have.begin(); it != have.end(); ++it) {
      if (!spec.contains(it.key())) spec[it.key()] = nullptr;
    }
  }
  return {{"metadata", {{"labels", Field(Field(desired, "metadata"), "labels")}}},
          {"spec", std::move(spec)}};
}

bool OwnedByJob(const json& object, const std::string& uid) {
  const json& refs = Field(Field(object, "metadata"), "ownerReferences");
  if (uid.empty() || !refs.is_array()) return false;
  for (const json& ref : refs) {
    if (StringField(ref, "uid") == uid) return true;
  }
  return false;
}

}  // namespace coach::backend::kube
