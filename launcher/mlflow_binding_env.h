#pragma once

// The MLflow binding (integrations/mlflow/binding.h) for the workers coach-launch spawns: in a
// pod, nothing put it on the PYTHONPATH before coach-launch; under the local backend the operator
// already did (COACH_MLFLOW_BINDING set) and nothing is added.

#include <string>

#include "launcher/launch_config.h"

namespace coach::launcher {

// `env` with the binding first on PYTHONPATH when it belongs to a tracked job's replica
// (COACH_MLFLOW_RUN_ID set) that has no binding yet: written to a new private directory under
// `tmp_root` (TMPDIR, else /tmp). Unchanged when the binding cannot be written (a read-only
// file system): the workers' runs then sit under the job's run, as on a plain pod; `warning`
// says why.
EnvMap WithMlflowBinding(EnvMap env, std::string* warning);

}  // namespace coach::launcher
