// defaulter.trainjob.trainer.kubeflow.org (upstream pkg/webhooks/trainjob_webhook.go).

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "operator/trainer/admission.h"
#include "operator/trainer/semantic_equal.h"

namespace coach::trainer::admission {
namespace {

using nlohmann::json;

// The runtimePatches list of a TrainJob, or nullptr when it has none; `label` names the object
// in errors.
absl::StatusOr<const json*> Patches(const json& train_job, const std::string& label) {
  if (!train_job.is_object()) return absl::InvalidArgumentError(label + ": must be an object");
  auto spec = train_job.find("spec");
  if (spec == train_job.end() || spec->is_null()) return nullptr;
  if (!spec->is_object()) return absl::InvalidArgumentError(label + " spec: must be an object");
  auto patches = spec->find("runtimePatches");
  if (patches == spec->end() || patches->is_null()) return nullptr;
  if (!patches->is_array()) {
    return absl::InvalidArgumentError(label + " spec.runtimePatches: must be a list");
  }
  for (size_t i = 0; i < patches->size(); ++i) {
    const json& p = (*patches)[i];
    const std::string path = absl::StrCat(label, " spec.runtimePatches[", i, "]");
    if (!p.is_object()) return absl::InvalidArgumentError(path + ": must be an object");
    auto manager = p.find("manager");
    if (manager != p.end() && !manager->is_null() && !manager->is_string()) {
      return absl::InvalidArgumentError(path + ".manager: must be a string");
    }
  }
  return &*patches;
}

std::string Manager(const json& patch) {
  auto it = patch.find("manager");
  return it != patch.end() && it->is_string() ? it->get<std::string>() : "";
}

bool HasTime(const json& patch) {
  auto it = patch.find("time");
  return it != patch.end() && !it->is_null();
}

json WithoutTime(json patch) {
  patch.erase("time");
  return patch;
}

}  // namespace

absl::StatusOr<json> DefaultTrainJob(const json& train_job, const json* old_train_job,
                                     absl::Time now) {
  absl::StatusOr<const json*> patches = Patches(train_job, "TrainJob");
  if (!patches.ok()) return patches.status();
  const json* old_patches = nullptr;
  if (old_train_job != nullptr) {
    absl::StatusOr<const json*> old = Patches(*old_train_job, "old TrainJob");
    if (!old.ok()) return old.status();
    old_patches = *old;
  }
  json out = train_job;
  if (*patches == nullptr) return out;
  const std::string stamp = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", now, absl::UTCTimeZone());
  json& list = out["spec"]["runtimePatches"];
  if (old_train_job == nullptr) {
    for (json& p : list) {
      if (!HasTime(p)) p["time"] = stamp;
    }
    return out;
  }
  // Upstream keys the old patches by manager, a later duplicate winning.
  std::map<std::string, const json*> old_by_manager;
  if (old_patches != nullptr) {
    for (const json& p : *old_patches) old_by_manager[Manager(p)] = &p;
  }
  for (json& p : list) {
    auto old = old_by_manager.find(Manager(p));
    if (old == old_by_manager.end()) {
      if (!HasTime(p)) p["time"] = stamp;
    } else if (SemanticEqual(WithoutTime(*old->second), WithoutTime(p))) {
      // An old patch without a time leaves the new one without, as upstream copies the nil.
      if (HasTime(*old->second)) {
        p["time"] = (*old->second)["time"];
      } else {
        p.erase("time");
      }
    } else {
      p["time"] = stamp;
    }
  }
  return out;
}

}  // namespace coach::trainer::admission
