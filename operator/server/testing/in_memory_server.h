#pragma once

// InMemoryServer: the real TrainingServiceImpl over an in-memory core, served on
// 127.0.0.1:<free port>, for tests of the SDK and the CLI. They talk to the service users
// reach (its admission, error codes and messages, paging, watch and log streams), not to an
// imitation of it that could drift.
//
// Beneath the service: JobService over a FakeJobStore (errors injectable per store method)
// and a FakeBackend (pods and logs as the test sets them). No controller runs, so a job's
// status changes only when the test changes it (SetStatus). Every call is recorded
// (recorder()). The service authenticates nobody: any token, or none, may do everything.

#include <grpcpp/server.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/v1/training_job.pb.h"
#include "common/testing/fake_clock.h"
#include "operator/core/job_service.h"
#include "operator/core/keyed_mutex.h"
#include "operator/core/testing/fake_backend.h"
#include "operator/core/watch_broadcaster.h"
#include "operator/server/testing/call_recorder.h"
#include "operator/server/training_service_impl.h"
#include "operator/store/testing/fake_job_store.h"

namespace coach::server::testing {

class InMemoryServer {
 public:
  InMemoryServer();
  ~InMemoryServer();
  InMemoryServer(const InMemoryServer&) = delete;
  InMemoryServer& operator=(const InMemoryServer&) = delete;

  // "127.0.0.1:<port>".
  const std::string& address() const { return address_; }

  core::JobService& jobs() { return jobs_; }
  store::testing::FakeJobStore& store() { return store_; }
  core::testing::FakeBackend& backend() { return backend_; }
  CallRecorder& recorder() { return recorder_; }

  // Stores `job` as given, status included, as a job that came another way (kubectl apply, an
  // older server) is: no admission and no watch event. A creation_timestamp it has is kept.
  void AddJob(const api::v1::TrainingJob& job);
  // Replaces the stored job's status and publishes MODIFIED, as the controller does after a
  // status write.
  void SetStatus(const std::string& ns, const std::string& name,
                 const api::v1::TrainingJobStatus& status);
  // Runs `change` on a thread of its own once a WatchJobs stream has subscribed (the
  // destructor joins it); the test fails when none has within 10 seconds.
  void WhenWatched(std::function<void()> change);
  // Ends every open WatchJobs and GetJobLogs stream with UNAVAILABLE, and each later one at
  // once, as a server shutting down does.
  void EndStreams() { service_.BeginShutdown(); }

 private:
  FakeClock clock_;
  store::testing::FakeJobStore store_{100, &clock_};
  core::testing::FakeBackend backend_;
  core::WatchBroadcaster watchers_;
  core::KeyedMutex job_locks_;
  core::JobService jobs_{&store_, &backend_, &watchers_, &job_locks_, nullptr};
  TrainingServiceImpl service_{&jobs_, TokenAuth("")};
  CallRecorder recorder_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::vector<std::thread> changes_;
};

}  // namespace coach::server::testing
