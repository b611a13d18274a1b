#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "operator/backend/local/local_backend.h"
#include "operator/backend/local/store/sqlite_job_store.h"
#include "operator/cmd/wiring.h"

namespace coach::cmd {

absl::Status WireLocal(const Flags& flags, BackendWiring* wiring) {
  auto sqlite = coach::backend::local::SqliteJobStore::Open(flags.state_dir);
  if (!sqlite.ok()) {
    return absl::Status(sqlite.status().code(), absl::StrCat("--state-dir ", flags.state_dir, ": ",
                                                             sqlite.status().ToString()));
  }
  coach::backend::local::LocalBackendOptions backend_options;
  backend_options.state_dir = flags.state_dir;
  backend_options.store = (*sqlite)->replicas();
  backend_options.jobs = sqlite->get();
  backend_options.shim_path = flags.shim;
  backend_options.default_working_dir = flags.workdir;
  backend_options.training_runtimes_dir = flags.training_runtimes;
  auto local = coach::backend::local::LocalBackend::Create(std::move(backend_options));
  if (!local.ok()) {
    return absl::Status(local.status().code(),
                        absl::StrCat("local backend: ", local.status().ToString()));
  }
  wiring->store = *std::move(sqlite);
  wiring->backend = *std::move(local);
  return absl::OkStatus();
}

}  // namespace coach::cmd
