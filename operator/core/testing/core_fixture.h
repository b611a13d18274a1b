#pragma once

// Everything a JobService/Controller test needs, real where it is cheap: a SqliteJobStore
// in a fresh temp dir, a FakeBackend, a FakeClock, metrics, the broadcaster, the service
// and (after StartController) a running controller.

#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "api/v1/training_job.pb.h"
#include "common/testing/fake_clock.h"
#include "operator/backend/local/store/sqlite_job_store.h"
#include "operator/core/controller.h"
#include "operator/core/job_service.h"
#include "operator/core/testing/fake_backend.h"
#include "operator/metrics/operator_metrics.h"

namespace coach::core::testing {

// A fresh directory (common/testing/test_dir.h).
std::string MakeTempDir();

// A PyTorchJob manifest (YAML): 1 Master + `workers` Workers, restartPolicy, optional
// runPolicy lines (e.g. "activeDeadlineSeconds: 30") and labels.
std::string PyTorchManifest(const std::string& name, int workers = 1,
                            const std::string& restart_policy = "OnFailure",
                            const std::string& run_policy_yaml = "",
                            const std::string& labels_yaml = "");

struct CoreEnv {
  explicit CoreEnv(std::string state_dir = MakeTempDir());
  ~CoreEnv();

  // Builds (or rebuilds, as after an operator restart) the controller and starts it.
  void StartController(int workers = 2);
  // Controller::Options::forget_finished_jobs of the next StartController: true, as the
  // operator runs the local backend (this store).
  bool forget_finished_jobs = true;
  void StopController();

  // Polls `pred` every 5 ms up to `timeout` (real time).
  static bool WaitFor(const std::function<bool()>& pred,
                      absl::Duration timeout = absl::Seconds(10));

  absl::StatusOr<api::v1::TrainingJob> Create(const std::string& manifest);
  // True when the stored job has condition `type` True.
  bool HasCondition(const std::string& ns, const std::string& name, const std::string& type);

  std::string state_dir;
  FakeClock clock;
  FakeBackend backend;
  std::unique_ptr<backend::local::SqliteJobStore> store;
  metrics::Registry registry;
  metrics::OperatorMetrics metrics{&registry};
  WatchBroadcaster watchers{16};
  KeyedMutex job_locks;
  std::unique_ptr<JobService> service;
  std::unique_ptr<Controller> controller;
};

}  // namespace coach::core::testing
