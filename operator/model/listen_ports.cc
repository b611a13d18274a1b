#include "operator/model/listen_ports.h"

#include <set>

#include "absl/status/statusor.h"
#include "api/v1/kinds.h"
#include "operator/model/replicas.h"

namespace coach::model {

std::map<std::string, std::vector<std::string>> ListenPortsByPod(const Job& job) {
  std::map<std::string, std::vector<std::string>> out;
  const api::v1::KindInfo* kind = api::v1::FindKind(job.kind());
  if (kind == nullptr) return out;
  if (job.kind() == api::v1::TRAIN_JOB) {
    out[reconcile::ReplicaName(job, kTrainerReplicatedJob, 0)] = {kTrainerPortName};
    return out;
  }
  for (const std::string& type : reconcile::ReplicaTypes(job)) {
    std::set<std::string> names;
    if (!kind->default_port_name.empty()) names.insert(std::string(kind->default_port_name));
    absl::StatusOr<Json> tmpl = reconcile::ParseTemplate(job, type);
    if (tmpl.ok()) {
      if (std::optional<size_t> c = reconcile::DefaultContainerIndex(*tmpl, *kind)) {
        const Json& container = (*tmpl)["spec"]["containers"][*c];
        if (container.contains("ports") && container["ports"].is_array()) {
          for (const Json& p : container["ports"]) {
            if (p.contains("name") && p["name"].is_string()) {
              names.insert(p["name"].get<std::string>());
            }
          }
        }
      }
    }
    for (int i = 0; i < reconcile::Replicas(job, type); ++i) {
      out[reconcile::ReplicaName(job, type, i)] = {names.begin(), names.end()};
    }
  }
  return out;
}

}  // namespace coach::model
