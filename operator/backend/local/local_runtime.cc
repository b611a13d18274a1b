// LocalBackend's view of a TrainJob's runtime: its snapshot under the state directory, else the
// runtime in --training-runtimes, held to upstream's runtime webhook, which a file never met.

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "operator/backend/local/local_backend.h"
#include "operator/trainer/admission.h"
#include "operator/trainer/runtime_directory.h"
#include "operator/trainer/runtime_lookup.h"

namespace coach::backend::local {

absl::Status LocalBackend::ObserveRuntime(const model::Job& job,
                                          model::ObservedState& observed) const {
  trainer::RuntimeSource source;
  source.snapshot = [&]() -> absl::StatusOr<std::optional<std::string>> {
    ASSIGN_OR_RETURN(const std::string dir,
                     layout_.ConfigMapDir(store::KeyOf(job), trainer::RuntimeSnapshotName(job)));
    std::ifstream snapshot(absl::StrCat(dir, "/", trainer::kRuntimeSnapshotKey));
    if (!snapshot.good()) return std::nullopt;
    std::stringstream text;
    text << snapshot.rdbuf();
    return text.str();
  };
  source.find =
      [&](const trainer::RuntimeReference& ref) -> absl::StatusOr<std::optional<nlohmann::json>> {
    if (options_.training_runtimes_dir.empty()) return std::nullopt;
    ASSIGN_OR_RETURN(std::optional<nlohmann::json> runtime,
                     trainer::FindRuntimeInDirectory(options_.training_runtimes_dir, ref.kind,
                                                     job.metadata().namespace_(), ref.name));
    if (!runtime.has_value()) return runtime;
    // On a cluster upstream's runtime webhook refuses such a runtime when it is created; a file
    // has no such door, so the TrainJob that names it is refused with the webhook's words.
    ASSIGN_OR_RETURN(trainer::admission::Result checked,
                     trainer::admission::ValidateTrainingRuntime(*runtime, nullptr));
    if (!checked.allowed()) {
      observed.refused = absl::StrCat(ref.kind, " \"", ref.name, "\" in --training-runtimes ",
                                      options_.training_runtimes_dir, ": ", checked.Message());
    }
    return runtime;
  };
  source.where = [&](const trainer::RuntimeReference&) {
    return options_.training_runtimes_dir.empty()
               ? std::string(": this operator has no runtimes (--training-runtimes)")
               : absl::StrCat(" in --training-runtimes ", options_.training_runtimes_dir);
  };
  return trainer::ObserveRuntime(job, source, observed);
}

}  // namespace coach::backend::local
