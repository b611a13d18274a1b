#include "launcher/mlflow_binding_env.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "integrations/mlflow/binding.h"

namespace coach::launcher {

EnvMap WithMlflowBinding(EnvMap env, std::string* warning) {
  if (env.count("COACH_MLFLOW_RUN_ID") == 0 || env.count(mlflow::kBindingDirEnv) > 0) return env;
  auto tmp = env.find("TMPDIR");
  std::string dir = absl::StrCat(tmp != env.end() && !tmp->second.empty() ? tmp->second : "/tmp",
                                 "/coach-mlflow-XXXXXX");
  if (::mkdtemp(dir.data()) == nullptr) {
    *warning = absl::StrCat("MLflow binding not set up: mkdtemp ", dir, ": ", std::strerror(errno));
    return env;
  }
  if (absl::Status s = mlflow::WriteBinding(dir); !s.ok()) {
    *warning = absl::StrCat("MLflow binding not set up: ", s.message());
    return env;
  }
  auto path = env.find("PYTHONPATH");
  env["PYTHONPATH"] =
      mlflow::PythonPathWithBinding(dir, path != env.end() ? path->second : std::string());
  env[mlflow::kBindingDirEnv] = dir;
  return env;
}

}  // namespace coach::launcher
