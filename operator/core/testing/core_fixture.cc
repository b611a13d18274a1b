#include "operator/core/testing/core_fixture.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/testing/eventually.h"
#include "common/testing/test_dir.h"
#include "operator/reconcile/conditions.h"

namespace coach::core::testing {

std::string MakeTempDir() { return ::coach::testing::FreshTestDir("coach-core"); }

std::string PyTorchManifest(const std::string& name, int workers, const std::string& restart_policy,
                            const std::string& run_policy_yaml, const std::string& labels_yaml) {
  std::string m = absl::StrCat(
      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: ", name, "\n");
  if (!labels_yaml.empty()) absl::StrAppend(&m, "  labels:\n", labels_yaml);
  absl::StrAppend(&m, "spec:\n");
  if (!run_policy_yaml.empty()) absl::StrAppend(&m, "  runPolicy:\n", run_policy_yaml);
  absl::StrAppend(&m, "  pytorchReplicaSpecs:\n");
  auto replica = [&](const std::string& type, int n) {
    absl::StrAppend(&m, "    ", type, ":\n      replicas: ", n,
                    "\n      restartPolicy: ", restart_policy,
                    "\n      template:\n        spec:\n          containers:\n"
                    "          - name: pytorch\n            image: busybox\n"
                    "            command: [\"true\"]\n");
  };
  replica("Master", 1);
  if (workers > 0) replica("Worker", workers);
  return m;
}

CoreEnv::CoreEnv(std::string dir) : state_dir(std::move(dir)) {
  backend::local::SqliteJobStore::Options options;
  options.clock = &clock;
  auto opened = backend::local::SqliteJobStore::Open(state_dir, options);
  if (!opened.ok()) {
    ADD_FAILURE() << opened.status();
    std::abort();
  }
  store = std::move(opened).value();
  service = std::make_unique<JobService>(store.get(), &backend, &watchers, &job_locks, &metrics);
}

CoreEnv::~CoreEnv() { StopController(); }

void CoreEnv::StartController(int workers) {
  StopController();
  Controller::Options options;
  options.workers = workers;
  options.queue.poll_interval = absl::Milliseconds(5);
  options.queue.backoff_base = absl::Milliseconds(5);
  options.queue.backoff_cap = absl::Milliseconds(50);
  options.forget_finished_jobs = forget_finished_jobs;
  controller = std::make_unique<Controller>(store.get(), &backend, service.get(), &watchers,
                                            &job_locks, &clock, &metrics, options);
  absl::Status started = controller->Start();
  ASSERT_TRUE(started.ok()) << started;
}

void CoreEnv::StopController() {
  if (controller != nullptr) controller->Stop();
  controller.reset();
}

bool CoreEnv::WaitFor(const std::function<bool()>& pred, absl::Duration timeout) {
  return ::coach::testing::Eventually(pred, timeout, absl::Milliseconds(5));
}

absl::StatusOr<api::v1::TrainingJob> CoreEnv::Create(const std::string& manifest) {
  CreateRequest request;
  request.manifest = manifest;
  return service->Create(request);
}

bool CoreEnv::HasCondition(const std::string& ns, const std::string& name,
                           const std::string& type) {
  auto job = store->Get({ns, name});
  return job.ok() && reconcile::HasTrueCondition(job->status(), type);
}

}  // namespace coach::core::testing
