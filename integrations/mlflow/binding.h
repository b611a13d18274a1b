#pragma once

// The in-process MLflow binding (python/sitecustomize.py, compiled in): the one piece of a
// tracked job's MLflow wiring that variables cannot carry safely (operator/reconcile/mlflow_env.h
// says why). Whoever starts a replica's processes puts it on their PYTHONPATH: the local backend
// for its replicas, coach-launch for the workers it spawns where nothing did before it.

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace coach::mlflow {

// Set beside PYTHONPATH to the directory that holds the binding, so that a coach-launch under
// the local backend does not add a second copy.
inline constexpr char kBindingDirEnv[] = "COACH_MLFLOW_BINDING";

// The binding's source.
absl::string_view BindingSource();

// Writes BindingSource() to dir/sitecustomize.py (creating dir, mode 0755; the file 0644, so
// replicas of any user read it). Rewrites it only when it differs. Internal on I/O errors.
absl::Status WriteBinding(const std::string& dir);

// `dir` first, then `existing` (a PYTHONPATH value, may be empty).
std::string PythonPathWithBinding(const std::string& dir, const std::string& existing);

}  // namespace coach::mlflow
