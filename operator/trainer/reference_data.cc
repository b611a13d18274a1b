#include "operator/trainer/reference_data.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "api/v1/codec/yaml_json.h"
#include "common/status_macros.h"

namespace coach::trainer::testing {

using nlohmann::json;

json WithDefaults(json o) {
  const std::string kind = o.value("kind", "");
  if (kind == "TrainJob") {
    if (!o["metadata"].contains("namespace")) o["metadata"]["namespace"] = "default";
    json& ref = o["spec"]["runtimeRef"];
    if (!ref.contains("apiGroup")) ref["apiGroup"] = "trainer.kubeflow.org";
    if (!ref.contains("kind")) ref["kind"] = "ClusterTrainingRuntime";
    if (!o["spec"].contains("suspend")) o["spec"]["suspend"] = false;
  } else if (kind == "TrainingRuntime" || kind == "ClusterTrainingRuntime") {
    if (kind == "TrainingRuntime" && !o["metadata"].contains("namespace")) {
      o["metadata"]["namespace"] = "default";
    }
    json& ml = o["spec"]["mlPolicy"];
    if (ml.contains("mpi")) {
      json& mpi = ml["mpi"];
      if (!mpi.contains("numProcPerNode")) mpi["numProcPerNode"] = 1;
      if (!mpi.contains("mpiImplementation")) mpi["mpiImplementation"] = "OpenMPI";
      if (!mpi.contains("sshAuthMountPath")) mpi["sshAuthMountPath"] = "/root/.ssh";
      if (!mpi.contains("runLauncherAsNode")) mpi["runLauncherAsNode"] = false;
    }
  }
  return o;
}

absl::StatusOr<std::vector<json>> LoadReference(const std::string& relative) {
  const char* shared = std::getenv("COACH_SHARED_DIR");
  if (shared == nullptr) {
    return absl::FailedPreconditionError("COACH_SHARED_DIR must point at the shared folder");
  }
  const std::string path = absl::StrCat(shared, "/reference/kubeflow-v2/", relative);
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  ASSIGN_OR_RETURN(std::vector<json> docs, api::v1::codec::ParseYamlDocuments(text.str()));
  for (json& d : docs) d = WithDefaults(std::move(d));
  return docs;
}

absl::StatusOr<json> LoadReferenceKind(const std::string& relative, const std::string& kind) {
  ASSIGN_OR_RETURN(std::vector<json> docs, LoadReference(relative));
  for (json& d : docs) {
    if (d.value("kind", "") == kind) return d;
  }
  return absl::NotFoundError(absl::StrCat("no ", kind, " in ", relative));
}

}  // namespace coach::trainer::testing
