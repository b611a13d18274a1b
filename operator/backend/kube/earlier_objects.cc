#include "operator/backend/kube/earlier_objects.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "operator/backend/kube/object_fields.h"
#include "operator/model/pod_identity.h"
#include "operator/model/replicas.h"

namespace coach::backend::kube {
namespace {

using nlohmann::json;

// A page of objects at a time: a cluster may hold many of an earlier operator's pods.
constexpr int64_t kPageSize = 500;

void LabelPage(kubeclient::KubeClient* client, const kubeclient::ResourceDescriptor& resource,
               const std::vector<json>& items, EarlierObjectsLabelled& result) {
  for (const json& item : items) {
    const std::string job = model::LabelOf(item, reconcile::kLabelJobName);
    const json& meta = Field(item, "metadata");
    const std::string ns = StringField(meta, "namespace");
    const std::string name = StringField(meta, "name");
    if (job.empty() || name.empty()) continue;
    // The uid makes the patch conditional on the object listed: one deleted and made again
    // under the same name since is somebody else's. (Not the resourceVersion: a running pod's
    // status changes all the time, and the label is right whatever its status.)
    const json patch = {
        {"metadata",
         {{"uid", StringField(meta, "uid")}, {"labels", {{model::kLabelCoachJobName, job}}}}}};
    absl::StatusOr<json> patched =
        client->Patch(resource, ns, name, kubeclient::PatchType::kMerge, patch);
    if (patched.ok()) {
      ++result.labelled;
      continue;
    }
    ++result.failed;
    spdlog::warn("kube backend: labelling {} {}/{} of an earlier operator: {}", resource.kind, ns,
                 name, patched.status().ToString());
  }
}

}  // namespace

absl::StatusOr<EarlierObjectsLabelled> LabelEarlierOperatorObjects(
    kubeclient::KubeClient* client, const std::vector<std::string>& namespaces) {
  EarlierObjectsLabelled result;
  const std::string selector =
      absl::StrCat(reconcile::kLabelOperatorName, ",", reconcile::kLabelJobName, ",!",
                   model::kLabelCoachJobName);
  namespace r = kubeclient::resources;
  for (const kubeclient::ResourceDescriptor& resource : {r::Pods(), r::Services()}) {
    for (const std::string& ns : namespaces) {
      kubeclient::ListOptions list;
      list.label_selector = selector;
      list.limit = kPageSize;
      do {
        ASSIGN_OR_RETURN(kubeclient::ListResult page, client->List(resource, ns, list));
        LabelPage(client, resource, page.items, result);
        list.continue_token = page.continue_token;
      } while (!list.continue_token.empty());
    }
  }
  if (result.labelled > 0 || result.failed > 0) {
    spdlog::info(
        "kube backend: labelled {} pods and Services of an earlier operator with {} ({} failed)",
        result.labelled, model::kLabelCoachJobName, result.failed);
  }
  return result;
}

}  // namespace coach::backend::kube
